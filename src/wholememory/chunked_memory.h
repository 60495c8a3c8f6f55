// CHUNKED: each rank allocates its own partition; every rank of the node maps each partition on
// its own, and the global reference holds a table of the per-rank pointers (one node only).
// CHUNKED HOST memory is host memory of one node, so its chunks are mapped one after the other
// into one range instead: it has a global pointer, as the published API promises ("Only
// Continuous memory type or Chunked Host memory has global pointer"), and a continuous global
// reference (stride 0), as upstream gives it.
#pragma once

#include <memory>
#include <vector>

#include "src/core/shared_segments.h"
#include "src/wholememory/contiguous_range.h"
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
  void map_each_chunk(Deadline deadline);

  core::SegmentSet segments_;
  std::vector<Mapping> mappings_;
  std::unique_ptr<ContiguousRange> range_;  // host memory: every chunk in one range
};

}  // namespace memloom::wholememory
