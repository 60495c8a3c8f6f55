#include "src/smem/trans/staged_copies.h"

#include <cstdlib>
#include <string>

#include "src/core/platform_loader.h"

namespace memloom::smem::trans {
namespace {

// More idle streams than concurrent transfers of one instance are not kept.
constexpr size_t kMaxIdleStreams = 8;

}  // namespace

bool staging_forced() {
  const char* forced = std::getenv("MEMLOOM_TRANS_STAGING");
  return forced != nullptr && std::string(forced) == "1";
}

bool staging_required() {
  // Device memory a host thread cannot touch is copied through a stream into host memory first.
  return staging_forced() || !core::platform().memory_domain().memory_is_host_accessible();
}

StreamPool::StreamPool(int device) : device_(device) {
  idle_.push_back(core::platform().create_stream(device));
}

std::unique_ptr<hal::Stream> StreamPool::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto stream = std::move(idle_.back());
      idle_.pop_back();
      return stream;
    }
  }
  return core::platform().create_stream(device_);
}

void StreamPool::give_back(std::unique_ptr<hal::Stream> stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.size() < kMaxIdleStreams) idle_.push_back(std::move(stream));
}

StreamPool::Lease::Lease(StreamPool& pool) : pool_(pool), stream_(pool.take()) {}

StreamPool::Lease::~Lease() {
  if (idle_) pool_.give_back(std::move(stream_));
}

void StreamPool::Lease::copy(void* dst, const void* src, size_t bytes) {
  idle_ = false;
  stream_->copy(dst, src, bytes);
}

void StreamPool::Lease::finish(Deadline deadline) {
  stream_->synchronize(deadline);
  idle_ = true;
}

}  // namespace memloom::smem::trans
