#include "src/wholememory/distributed_memory.h"

#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

DistributedMemory::DistributedMemory(std::shared_ptr<Communicator> comm, MemorySpec spec,
                                     std::string identity)
    : MemoryHandle(std::move(comm), std::move(spec), std::move(identity)) {
  auto& domain = core::platform().memory_domain();
  if (local_size() > 0) {
    segment_ =
        domain.allocate(kind(), device(), core::round_up(local_size(), domain.granularity(kind())));
    address_ = domain.map_anywhere(*segment_);
  }
  set_rank_pointer(this->comm().rank(), address_);
}

DistributedMemory::~DistributedMemory() {
  if (address_ == nullptr) return;
  release_quietly("a distributed partition", [&] {
    core::platform().memory_domain().unmap_anywhere(address_, segment_->size());
  });
}

}  // namespace memloom::wholememory
