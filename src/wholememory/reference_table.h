// The arrays a wholememory_gref_t points to (each rank's data pointer for CHUNKED, each rank's
// byte offset for all types). They live in memory of the allocation's own kind so that kernels on
// the device read them as easily as the data.
#pragma once

#include <memory>
#include <vector>

#include "hw/hal/memory_domain.h"

namespace memloom::wholememory {

class ReferenceTable {
 public:
  // `pointers` may be empty (CONTINUOUS); `offsets` has world_size + 1 entries.
  ReferenceTable(hal::MemoryKind kind, int device, const std::vector<void*>& pointers,
                 const std::vector<size_t>& offsets);
  ~ReferenceTable();
  ReferenceTable(const ReferenceTable&) = delete;
  ReferenceTable& operator=(const ReferenceTable&) = delete;

  void** pointers() const { return pointers_; }  // null when built without pointers
  size_t* offsets() const { return offsets_; }

 private:
  std::unique_ptr<hal::Segment> segment_;
  void* mapped_ = nullptr;
  void** pointers_ = nullptr;
  size_t* offsets_ = nullptr;
};

}  // namespace memloom::wholememory
