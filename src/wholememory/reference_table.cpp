#include "src/wholememory/reference_table.h"

#include <cstring>

#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/blocking_copy.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

ReferenceTable::ReferenceTable(hal::MemoryKind kind, int device, const std::vector<void*>& pointers,
                               const std::vector<size_t>& offsets) {
  auto& domain = core::platform().memory_domain();
  const size_t pointer_bytes = pointers.size() * sizeof(void*);
  const size_t bytes = pointer_bytes + offsets.size() * sizeof(size_t);
  segment_ = domain.allocate(kind, device, core::round_up(bytes, domain.granularity(kind)));
  mapped_ = domain.map_anywhere(*segment_);
  // Staged in host memory, then copied, since device memory may not be writable by the CPU.
  std::vector<unsigned char> staging(bytes);
  if (!pointers.empty()) std::memcpy(staging.data(), pointers.data(), pointer_bytes);
  std::memcpy(staging.data() + pointer_bytes, offsets.data(), offsets.size() * sizeof(size_t));
  try {
    BlockingCopier(device).copy(mapped_, staging.data(), bytes);
  } catch (...) {
    domain.unmap_anywhere(mapped_, segment_->size());
    throw;
  }
  auto* base = static_cast<unsigned char*>(mapped_);
  if (!pointers.empty()) pointers_ = reinterpret_cast<void**>(base);
  offsets_ = reinterpret_cast<size_t*>(base + pointer_bytes);
}

ReferenceTable::~ReferenceTable() {
  release_quietly("a global reference table", [&] {
    core::platform().memory_domain().unmap_anywhere(mapped_, segment_->size());
  });
}

}  // namespace memloom::wholememory
