#include "src/wholememory/continuous_memory.h"

namespace memloom::wholememory {

ContinuousMemory::ContinuousMemory(std::shared_ptr<Communicator> comm, MemorySpec spec,
                                   std::string identity, Deadline deadline)
    : MemoryHandle(std::move(comm), std::move(spec), std::move(identity)) {
  range_ = ContiguousRange::create(this->comm().group(), plan().sizes, kind(), device(), deadline);
  publish_contiguous(range_->base());
}

}  // namespace memloom::wholememory
