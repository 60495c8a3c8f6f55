#include "hw/host/host_memory_staging.h"

#include <cstring>
#include <new>

namespace memloom::host {
namespace {

// Cache-line aligned, as the page-locked buffers of the device staging are (page aligned).
constexpr std::align_val_t kAlignment{64};

}  // namespace

bool HostMemoryStaging::needs_staging(const void* pointer) const {
  (void)pointer;
  return false;  // the CPU touches every buffer of this backend
}

void HostMemoryStaging::copy(void* to, const void* from, size_t bytes, Deadline deadline) {
  (void)deadline;  // a memcpy has no wait to bound
  std::memcpy(to, from, bytes);
}

void* HostMemoryStaging::allocate_host(size_t bytes) {
  return ::operator new(bytes, kAlignment);
}

void HostMemoryStaging::free_host(void* buffer) noexcept {
  ::operator delete(buffer, kAlignment);
}

}  // namespace memloom::host
