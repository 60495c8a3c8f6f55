// CONTINUOUS: every rank maps every partition into one contiguous range (one node only).
#pragma once

#include "src/wholememory/contiguous_range.h"
#include "src/wholememory/memory_handle.h"

namespace memloom::wholememory {

class ContinuousMemory final : public MemoryHandle {
 public:
  ContinuousMemory(std::shared_ptr<Communicator> comm, MemorySpec spec, std::string identity,
                   Deadline deadline);

 private:
  std::unique_ptr<ContiguousRange> range_;
};

}  // namespace memloom::wholememory
