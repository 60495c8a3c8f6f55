#include "src/wholememory/contiguous_range.h"

#include <algorithm>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

std::vector<size_t> ContiguousRange::first_pages(const std::vector<size_t>& sizes,
                                                 size_t granularity) {
  std::vector<size_t> first(sizes.size() + 1, 0);
  size_t start = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    first[r] = r == 0 ? 0 : (start + granularity - 1) / granularity;
    start += sizes[r];
  }
  first[sizes.size()] = (start + granularity - 1) / granularity;
  return first;
}

std::unique_ptr<ContiguousRange> ContiguousRange::create(core::Group& group,
                                                         const std::vector<size_t>& sizes,
                                                         hal::MemoryKind kind, int device,
                                                         Deadline deadline) {
  if (group.spans_nodes() || static_cast<int>(sizes.size()) != group.size()) {
    raise(Status::kLogic, "a contiguous range needs one size per rank of a single-node group");
  }
  auto& domain = core::platform().memory_domain();
  const size_t page = domain.granularity(kind);
  const auto first = first_pages(sizes, page);
  const int me = group.rank();

  std::unique_ptr<ContiguousRange> range(new ContiguousRange());
  range->segments_ =
      core::exchange_segments(group, kind, device, (first[me + 1] - first[me]) * page, deadline);
  const size_t total_pages = first.back();
  // An empty range still gets one page of address space so that base() is a real address.
  range->range_ = domain.reserve_for(kind, std::max<size_t>(total_pages, 1) * page, nullptr);
  for (int r = 0; r < group.size(); ++r) {
    if (first[r + 1] == first[r]) continue;
    const auto& segment = range->segments_.segments.at(r);
    if (!segment) raise(Status::kLogic, "rank " + std::to_string(r) + "'s pages were not shared");
    range->range_->map(first[r] * page, *segment);
  }
  return range;
}

ContiguousRange::~ContiguousRange() {
  release_quietly("a contiguous WholeMemory range", [&] { range_.reset(); });
}

}  // namespace memloom::wholememory
