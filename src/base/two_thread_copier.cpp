#include "src/base/two_thread_copier.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "src/base/log.h"
#include "src/base/streaming_copy.h"

namespace memloom::base {

TwoThreadCopier::TwoThreadCopier(size_t threshold, size_t chunk)
    : threshold_(std::max<size_t>(threshold, 2)),
      chunk_(std::max<size_t>(chunk, 1)),
      owner_pid_(::getpid()) {}

TwoThreadCopier::~TwoThreadCopier() = default;

bool TwoThreadCopier::splits(const void* dst, const void* src, size_t bytes) const {
  const auto d = reinterpret_cast<uintptr_t>(dst);
  const auto s = reinterpret_cast<uintptr_t>(src);
  return bytes >= threshold_ && (d + bytes <= s || s + bytes <= d);
}

ThreadPool* TwoThreadCopier::pool() {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (!pool_tried_) {
    pool_tried_ = true;
    try {
      pool_ = std::make_unique<ThreadPool>(2);
    } catch (const std::system_error& error) {
      MEMLOOM_LOG(kDebug, "no helper thread for large copies: " << error.what());
    }
  }
  return pool_.get();
}

void TwoThreadCopier::copy(void* dst, const void* src, size_t bytes) {
  ThreadPool* threads = nullptr;
  if (splits(dst, src, bytes) && ::getpid() == owner_pid_) threads = pool();
  if (threads == nullptr) {
    std::memmove(dst, src, bytes);
    return;
  }
  auto* to = static_cast<std::byte*>(dst);
  const auto* from = static_cast<const std::byte*>(src);
  const size_t pieces = (bytes + chunk_ - 1) / chunk_;
  threads->parallel_for(pieces, 1, [&](size_t begin, size_t end) {
    const size_t first = begin * chunk_;
    streaming_copy(to + first, from + first, std::min(end * chunk_, bytes) - first);
  });
}

}  // namespace memloom::base
