#include "hw/host/staging_buffer_pool.h"

#include <utility>

#include "hw/host/host_memory_staging.h"

namespace memloom::host {

namespace {

// Where leases beyond the pool's buffers get their memory: never page-locked (see the header).
HostMemoryStaging& plain_host_memory() {
  static HostMemoryStaging plain;
  return plain;
}

}  // namespace

std::shared_ptr<StagingBufferPool> StagingBufferPool::create(BufferStaging& staging,
                                                             size_t buffer_bytes, size_t count) {
  std::shared_ptr<StagingBufferPool> pool(new StagingBufferPool(staging, buffer_bytes));
  pool->free_.reserve(count);
  for (size_t i = 0; i < count; ++i) pool->free_.emplace_back(staging, buffer_bytes);
  return pool;
}

StagingBufferPool::Lease::~Lease() {
  if (pooled_ && buffer_.data() != nullptr) pool_->give_back(std::move(buffer_));
}

StagingBufferPool::Lease& StagingBufferPool::Lease::operator=(Lease&& other) noexcept {
  Lease old(std::move(*this));  // gives back what this lease held
  pool_ = std::move(other.pool_);
  buffer_ = std::move(other.buffer_);
  pooled_ = other.pooled_;
  return *this;
}

StagingBufferPool::Lease StagingBufferPool::lease(size_t bytes) {
  Lease lease;
  lease.pool_ = shared_from_this();
  if (bytes <= buffer_bytes_) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      lease.buffer_ = std::move(free_.back());
      free_.pop_back();
      lease.pooled_ = true;
      return lease;
    }
  }
  lease.buffer_ = StagingBuffer(plain_host_memory(), bytes);
  return lease;
}

void StagingBufferPool::give_back(StagingBuffer buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(buffer));
}

}  // namespace memloom::host
