// One transfer() call's ops on one UCX endpoint: issued as ucp_put_nbx/ucp_get_nbx without
// waiting, then one endpoint flush, so a batch of small ops costs one round trip, not one each.
//
// Order: UCX does not order RMA operations among themselves, but transfer() promises that ops run
// in order (a read sees an earlier write of its call). So an op that overlaps an earlier op of the
// batch, in remote or in local memory, first waits for everything issued before it (a flush):
// independent ops stream, dependent ones are ordered.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>

#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"
#include "src/base/range_map.h"

namespace memloom::host {

class UcxTransferBatch {
 public:
  UcxTransferBatch(UcxWorker& worker, ucp_ep_h ep);
  // Waits (briefly) for requests still in flight; they are only left behind after a failure.
  ~UcxTransferBatch();
  UcxTransferBatch(const UcxTransferBatch&) = delete;
  UcxTransferBatch& operator=(const UcxTransferBatch&) = delete;

  // Issues one op; false when the batch already failed (see status()) or the deadline passed.
  bool put(const void* local, size_t bytes, uint64_t remote, ucp_rkey_h key, Deadline deadline);
  bool get(void* local, size_t bytes, uint64_t remote, ucp_rkey_h key, Deadline deadline);
  // Flushes the endpoint and waits for every op; false at the deadline or on a failure.
  bool complete(Deadline deadline);

  // UCS_OK, or the first error an op or flush completed with.
  ucs_status_t status() const;
  // After the call gave up on a live peer: lets the requests under way end before the endpoint is
  // closed by force (UcxWorker::progress_while_ending).
  void let_moving_requests_end();

 private:
  struct Completion;
  static void done(void* request, ucs_status_t status, void* user_data);
  // Orders the op after those before it when it overlaps one of them.
  bool order(uint64_t remote, const void* local, size_t bytes, Deadline deadline);
  bool track(ucs_status_ptr_t request);
  ucp_request_param_t param();

  UcxWorker& worker_;
  ucp_ep_h ep_;
  Completion* completion_;  // shared with UCX's callbacks; leaked if they never come
  base::RangeMap<> remote_ranges_, local_ranges_;  // what this epoch of the batch touched
};

}  // namespace memloom::host
