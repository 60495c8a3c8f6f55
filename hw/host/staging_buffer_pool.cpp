#include "hw/host/staging_buffer_pool.h"

namespace memloom::host {

StagingBufferPool::~StagingBufferPool() {
  for (std::byte* buffer : free_) staging_.free_host(buffer);
}

StagingBufferPool::Lease StagingBufferPool::lease(size_t bytes) {
  std::shared_ptr<StagingBufferPool> self = shared_from_this();
  if (bytes > buffer_bytes_) {
    return Lease(static_cast<std::byte*>(staging_.allocate_host(bytes)),
                 [self](std::byte* buffer) { self->staging_.free_host(buffer); });
  }
  std::byte* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  // Allocated outside the lock: slow.
  if (buffer == nullptr) buffer = static_cast<std::byte*>(staging_.allocate_host(buffer_bytes_));
  return Lease(buffer, [self](std::byte* leased) { self->give_back(leased); });
}

void StagingBufferPool::give_back(std::byte* buffer) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kept_) return free_.push_back(buffer);
  }
  staging_.free_host(buffer);  // after the lock: freeing page-locked memory is slow
}

void StagedParts::add(size_t part, std::byte* device, size_t bytes) {
  parts_.push_back({part, device, bytes_, bytes});
  bytes_ += bytes;
}

void StagedParts::lease(StagingBufferPool& pool, std::vector<ucp_dt_iov_t>& iov) {
  buffer_ = pool.lease(bytes_);
  for (const Part& part : parts_) iov[part.part].buffer = buffer_.get() + part.offset;
}

std::vector<StagingCopy> StagedParts::copies(bool into_buffer) const {
  std::vector<StagingCopy> copies;
  for (const Part& part : parts_) {
    std::byte* buffer = buffer_.get() + part.offset;
    copies.push_back(into_buffer ? StagingCopy{buffer, part.device, part.bytes}
                                 : StagingCopy{part.device, buffer, part.bytes});
  }
  return copies;
}

}  // namespace memloom::host
