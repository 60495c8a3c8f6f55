#include "src/wholememory/chunked_memory.h"

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

ChunkedMemory::ChunkedMemory(std::shared_ptr<Communicator> comm, MemorySpec spec,
                             std::string identity, Deadline deadline)
    : MemoryHandle(std::move(comm), std::move(spec), std::move(identity)) {
  if (kind() == hal::MemoryKind::kHost) {
    range_ =
        ContiguousRange::create(this->comm().group(), plan().sizes, kind(), device(), deadline);
    publish_contiguous(range_->base());
    return;
  }
  map_each_chunk(deadline);
}

void ChunkedMemory::map_each_chunk(Deadline deadline) {
  auto& domain = core::platform().memory_domain();
  auto& group = this->comm().group();
  const size_t padded = core::round_up(local_size(), domain.granularity(kind()));
  segments_ = core::exchange_segments(group, kind(), device(), padded, deadline);
  try {
    for (int r = 0; r < group.size(); ++r) {
      const auto& segment = segments_.segments.at(r);
      if (!segment) {
        // Only an empty partition has no segment on a single-node communicator.
        if (plan().sizes[r] != 0)
          raise(Status::kLogic, "rank " + std::to_string(r) + "'s chunk was not shared");
        set_rank_pointer(r, nullptr);
        continue;
      }
      void* address = domain.map_anywhere(*segment);
      mappings_.push_back({address, segment->size()});
      set_rank_pointer(r, address);
    }
    publish_chunked();
  } catch (...) {
    for (const auto& mapping : mappings_) {
      release_quietly("a chunk", [&] { domain.unmap_anywhere(mapping.address, mapping.size); });
    }
    throw;
  }
}

ChunkedMemory::~ChunkedMemory() {
  auto& domain = core::platform().memory_domain();
  for (const auto& mapping : mappings_) {
    release_quietly("a chunk", [&] { domain.unmap_anywhere(mapping.address, mapping.size); });
  }
}

}  // namespace memloom::wholememory
