// DISTRIBUTED: each rank allocates and maps only its own partition; peers' partitions are reached
// through communication, never through a mapping.
#pragma once

#include "src/wholememory/memory_handle.h"

namespace memloom::wholememory {

class DistributedMemory final : public MemoryHandle {
 public:
  DistributedMemory(std::shared_ptr<Communicator> comm, MemorySpec spec, std::string identity);
  ~DistributedMemory() override;

 private:
  std::unique_ptr<hal::Segment> segment_;
  void* address_ = nullptr;
};

}  // namespace memloom::wholememory
