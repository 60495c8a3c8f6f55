#include "src/wholememory/ops/device_block_cache.h"

#include <unistd.h>

#include <algorithm>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {
namespace {

constexpr size_t kMaxKeptBytes = size_t{2} << 30;

}  // namespace

DeviceBlockCache& DeviceBlockCache::instance() {
  // Never destroyed: blocks must not be released by static destructors after the backend.
  static auto* cache = new DeviceBlockCache();
  return *cache;
}

void DeviceBlockCache::forget_if_forked() {
  if (kept_ != nullptr && owner_pid_ == ::getpid()) return;
  kept_ = new std::vector<DeviceBlock>();  // an inherited list is leaked, never handed out
  kept_bytes_ = 0;
  owner_pid_ = ::getpid();
}

void DeviceBlockCache::release(DeviceBlock& block) {
  if (block.pointer == nullptr) return;
  release_quietly("a device block", [&] {
    core::platform().memory_domain().unmap_anywhere(block.pointer, block.bytes);
  });
  block.segment.reset();
  block.pointer = nullptr;
}

std::vector<DeviceBlock> DeviceBlockCache::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  forget_if_forked();
  std::vector<DeviceBlock> blocks;
  blocks.swap(*kept_);
  kept_bytes_ = 0;
  return blocks;
}

DeviceBlock DeviceBlockCache::take(size_t bytes, int device) {
  auto& domain = core::platform().memory_domain();
  const size_t size =
      core::round_up(bytes == 0 ? 1 : bytes, domain.granularity(hal::MemoryKind::kDevice));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    forget_if_forked();
    auto best = kept_->end();
    for (auto it = kept_->begin(); it != kept_->end(); ++it) {
      if (it->device == device && it->bytes >= size && it->bytes <= 2 * size &&
          (best == kept_->end() || it->bytes < best->bytes)) {
        best = it;
      }
    }
    if (best != kept_->end()) {
      DeviceBlock block = std::move(*best);
      kept_->erase(best);
      kept_bytes_ -= block.bytes;
      return block;
    }
  }
  for (int attempt = 0;; ++attempt) {
    try {
      DeviceBlock block;
      block.segment = domain.allocate(hal::MemoryKind::kDevice, device, size);
      block.pointer = domain.map_anywhere(*block.segment);
      block.bytes = size;
      block.device = device;
      return block;
    } catch (const Error& error) {
      if (error.status() != Status::kOutOfMemory || attempt > 0) throw;
      for (auto& kept : drain()) release(kept);
    }
  }
}

void DeviceBlockCache::give(DeviceBlock block) {
  if (block.pointer == nullptr) return;
  std::vector<DeviceBlock> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    forget_if_forked();
    // Kept blocks count against the device's capacity, so keep at most a quarter of it.
    const size_t limit =
        std::min(kMaxKeptBytes, core::platform().device_capacity(block.device) / 4);
    if (block.bytes <= limit) {
      // The newest block stays and the oldest ones make room: an operation's next call asks for
      // the sizes it just gave back, while blocks another kind of operation left long ago may
      // never be asked for again (a full cache that turned new blocks away made a HIERARCHY
      // gather after a scatter allocate, fault in and unmap its buffers on every call).
      kept_bytes_ += block.bytes;
      kept_->push_back(std::move(block));
      while (kept_bytes_ > limit || kept_->size() > kMaxKeptBlocks) {
        kept_bytes_ -= kept_->front().bytes;
        evicted.push_back(std::move(kept_->front()));
        kept_->erase(kept_->begin());
      }
    } else {
      evicted.push_back(std::move(block));
    }
  }
  for (auto& old : evicted) release(old);
}

}  // namespace memloom::wholememory
