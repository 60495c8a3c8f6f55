// The order of one transfer() call's ops on either data path (ucx_transport.h): UCX does not keep
// ops in order among themselves, yet a read sees an earlier write of its call. So an op that
// overlaps an earlier one, in remote or in local memory, waits until every op before it completed.
//
// The call's ops are checked once, sorted, up front; only a call where two of them overlap keeps
// ranges for each op. Checking each op of a 1024 x 4 KiB batch against a tree of those before it
// cost about 150 us, before its last message left.
#pragma once

#include <vector>

#include "hw/hal/transport.h"
#include "src/base/range_map.h"

namespace memloom::host {

class UcxTransferOrder {
 public:
  explicit UcxTransferOrder(const std::vector<const hal::TransferOp*>& work);

  // True when `op` overlaps an op added since the last restart(): the caller completes those
  // first, then restart()s.
  bool must_wait(const hal::TransferOp& op) const;
  void add(const hal::TransferOp& op);
  void restart();

 private:
  bool any_overlap_ = false;  // two of the call's ops overlap: only then are ranges kept
  base::RangeMap<> remote_, local_;
};

}  // namespace memloom::host
