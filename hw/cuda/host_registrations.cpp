#include "hw/cuda/host_registrations.h"

#include <algorithm>
#include <mutex>

#include "src/base/range_map.h"

namespace memloom::cuda {
namespace {

struct Registrations {
  std::mutex mutex;
  base::RangeMap<> ranges;
};

// Process-wide, as CUDA's own registrations are; never destroyed, so that a segment unmapped
// during static destruction still finds it.
Registrations& registrations() {
  static auto* table = new Registrations();
  return *table;
}

uint64_t as_number(const void* address) {
  return reinterpret_cast<uintptr_t>(address);
}

}  // namespace

void note_host_registered(const void* address, size_t size) {
  auto& table = registrations();
  std::lock_guard<std::mutex> lock(table.mutex);
  table.ranges.insert(as_number(address), size);  // CUDA refused an overlap before this
}

void note_host_unregistered(const void* address) {
  auto& table = registrations();
  std::lock_guard<std::mutex> lock(table.mutex);
  table.ranges.erase(as_number(address));
}

size_t bytes_before_registration_edge(const void* dst, const void* src, size_t bytes) {
  auto& table = registrations();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto before_edge = [&](const void* address) -> uint64_t {
    const uint64_t start = as_number(address);
    const auto* first = table.ranges.overlapping(start, bytes);
    if (first == nullptr) return bytes;
    if (first->start > start) return first->start - start;
    return std::min<uint64_t>(bytes, first->start + first->size - start);
  };
  return std::min(before_edge(dst), before_edge(src));
}

}  // namespace memloom::cuda
