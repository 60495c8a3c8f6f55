// Who has joined a BM object, as seen by same-node ranks without a store round trip: every rank
// owns one word in a small host segment shared with its node (0 = not joined, 1 = joined), read
// with one atomic load on each copy. Ranks on other nodes are not visible here; their transport
// endpoints refuse requests while they are not joined.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "memloom/deadline.h"
#include "src/core/group.h"
#include "src/core/shared_segments.h"

namespace memloom::smem {

class BmMembership {
 public:
  // Collective over `group`.
  static std::unique_ptr<BmMembership> create(core::Group& group, Deadline deadline);
  ~BmMembership();
  BmMembership(const BmMembership&) = delete;
  BmMembership& operator=(const BmMembership&) = delete;

  void set_joined(bool joined);
  bool joined() const { return is_joined(rank_); }
  // Whether same-node `rank` is joined now; throws kLogic for a rank on another node.
  bool is_joined(int rank) const;

 private:
  BmMembership() = default;

  int rank_ = 0;
  core::SegmentSet segments_;
  std::vector<void*> mappings_;  // one per same-node rank, null for other nodes
  size_t mapping_size_ = 0;
};

}  // namespace memloom::smem
