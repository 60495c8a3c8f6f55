#include "hw/host/buffer_staging.h"

#include <cstring>

namespace memloom::host {

void HostMemoryStaging::copy_all(const std::vector<StagingCopy>& copies, Deadline) {
  for (const StagingCopy& c : copies) std::memcpy(c.to, c.from, c.bytes);
}

StagingBufferPool::StagingBufferPool(BufferStaging& staging, size_t buffer_bytes, size_t count)
    : staging_(staging), buffer_bytes_(buffer_bytes), count_(count) {
  free_.reserve(count);
  if (!staging_.allocation_waits_for_device()) return;
  for (; allocated_ < count_; ++allocated_) {
    free_.push_back(static_cast<std::byte*>(staging_.allocate_host(buffer_bytes_)));
  }
}

StagingBufferPool::~StagingBufferPool() {
  for (std::byte* buffer : free_) staging_.free_host(buffer);
}

StagingBufferPool::Lease StagingBufferPool::lease(size_t bytes) {
  if (bytes <= buffer_bytes_) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::byte* buffer = nullptr;
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    } else if (allocated_ < count_) {  // only where allocating cannot wait for the device
      buffer = static_cast<std::byte*>(staging_.allocate_host(buffer_bytes_));
      ++allocated_;
    }
    if (buffer != nullptr) {
      return Lease(buffer, [self = shared_from_this()](std::byte* leased) {
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->free_.push_back(leased);
      });
    }
  }
  return Lease(static_cast<std::byte*>(HostMemoryStaging::allocate(bytes)),
               HostMemoryStaging::free);
}

std::vector<StagingCopy> StagedParts::copy_host_parts(bool into_buffer) const {
  std::vector<StagingCopy> copies;
  for (const Part& part : parts_) {
    std::byte* buffer = buffer_.get() + part.offset;
    const StagingCopy copy = into_buffer ? StagingCopy{buffer, part.device, part.bytes}
                                         : StagingCopy{part.device, buffer, part.bytes};
    if (part.host) {
      std::memcpy(copy.to, copy.from, copy.bytes);
    } else {
      copies.push_back(copy);
    }
  }
  return copies;
}

}  // namespace memloom::host
