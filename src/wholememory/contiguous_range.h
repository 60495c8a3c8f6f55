// One contiguous virtual range over the partitions of every rank of a single-node group, in rank
// order. Physical memory comes in pages of the domain's granularity; each rank allocates the pages
// whose first byte lies in its own partition, so a partition lives in its owner's memory except
// for the page it shares with the next partition. Every rank maps all pages in the same order.
#pragma once

#include <memory>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "memloom/deadline.h"
#include "src/core/group.h"
#include "src/core/shared_segments.h"

namespace memloom::wholememory {

class ContiguousRange {
 public:
  // Collective over `group` (all of one node): sizes[r] is the partition of group rank r.
  static std::unique_ptr<ContiguousRange> create(core::Group& group,
                                                 const std::vector<size_t>& sizes,
                                                 hal::MemoryKind kind, int device,
                                                 Deadline deadline);
  ~ContiguousRange();

  char* base() const { return static_cast<char*>(range_->base()); }

  // The first page each of `sizes.size()` partitions owns (plus the end), for `granularity`-byte
  // pages: page p belongs to the partition holding byte p * granularity.
  static std::vector<size_t> first_pages(const std::vector<size_t>& sizes, size_t granularity);

 private:
  ContiguousRange() = default;
  core::SegmentSet segments_;
  std::unique_ptr<hal::VaRange> range_;  // declared last: unmapped before the segments go
};

}  // namespace memloom::wholememory
