#include "hw/host/staging_buffer_pool.h"

#include <utility>

namespace memloom::host {

std::shared_ptr<StagingBufferPool> StagingBufferPool::create(BufferStaging& staging,
                                                             size_t buffer_bytes, size_t kept) {
  return std::shared_ptr<StagingBufferPool>(new StagingBufferPool(staging, buffer_bytes, kept));
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
  if (bytes > buffer_bytes_) {
    lease.buffer_ = StagingBuffer(staging_, bytes);
    return lease;
  }
  lease.pooled_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      lease.buffer_ = std::move(free_.back());
      free_.pop_back();
      return lease;
    }
  }
  lease.buffer_ = StagingBuffer(staging_, buffer_bytes_);  // allocated outside the lock: slow
  return lease;
}

void StagingBufferPool::give_back(StagingBuffer buffer) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < kept_) free_.push_back(std::move(buffer));
  // Otherwise `buffer` is freed on return, after the lock: freeing page-locked memory is slow.
}

void StagedParts::add(size_t part, std::byte* device, size_t bytes) {
  parts_.push_back({part, device, bytes_, bytes});
  bytes_ += bytes;
}

void StagedParts::lease(StagingBufferPool& pool, std::vector<ucp_dt_iov_t>& iov) {
  buffer_ = pool.lease(bytes_);
  for (const Part& part : parts_) iov[part.part].buffer = buffer_.data() + part.offset;
}

std::vector<StagingCopy> StagedParts::copies(bool into_buffer) const {
  std::vector<StagingCopy> copies;
  for (const Part& part : parts_) {
    std::byte* buffer = buffer_.data() + part.offset;
    copies.push_back(into_buffer ? StagingCopy{buffer, part.device, part.bytes}
                                 : StagingCopy{part.device, buffer, part.bytes});
  }
  return copies;
}

}  // namespace memloom::host
