// CHUNKED: each rank allocates its own partition; every rank of the node maps each partition on
// its own, and the global reference holds a table of the per-rank pointers (one node only).
#pragma once

#include <vector>

#include "src/core/shared_segments.h"
#include "src/wholememory/memory_handle.h"

namespace memloom::wholememory {

class ChunkedMemory final : public MemoryHandle {
 public:
  ChunkedMemory(std::shared_ptr<Communicator> comm, MemorySpec spec, std::string identity,
                Deadline deadline);
  ~ChunkedMemory() override;

 private:
  struct Mapping {
    void* address;
    size_t size;
  };
  core::SegmentSet segments_;
  std::vector<Mapping> mappings_;
};

}  // namespace memloom::wholememory
