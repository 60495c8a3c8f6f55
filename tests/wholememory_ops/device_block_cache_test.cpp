// The default environment's cache of device blocks: a block given back is handed out again for
// the same size, and when the cache is full the blocks given back longest ago leave, not the one
// just given back (a full cache that turned new blocks away made every HIERARCHY gather after a
// scatter allocate and fault in fresh buffers). Each test runs in one forked rank.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <vector>

#include "src/core/platform_loader.h"
#include "src/wholememory/ops/device_block_cache.h"
#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wholememory::DeviceBlock;
using wholememory::DeviceBlockCache;

// Blocks are whole multiples of the domain's granularity (4 KiB emulated, 2 MiB on CUDA), so the
// sizes are too: smaller ones would round up to one size.
size_t small_size() {
  return core::platform().memory_domain().granularity(hal::MemoryKind::kDevice);
}
// More than twice the small size: a kept block of it is never handed out for the small size.
size_t other_size() {
  return 3 * small_size();
}

TEST(DeviceBlockCache, AGivenBackBlockIsHandedOutAgain) {
  run_in_one_rank([] {
    const int device = core::platform().current_device();
    auto& cache = DeviceBlockCache::instance();
    DeviceBlock block = cache.take(small_size(), device);
    void* pointer = block.pointer;
    ASSERT_NE(pointer, nullptr);
    cache.give(std::move(block));
    DeviceBlock again = cache.take(small_size(), device);
    EXPECT_EQ(again.pointer, pointer);
    cache.give(std::move(again));
  });
}

TEST(DeviceBlockCache, AFullCacheLetsItsOldestBlocksGoNotTheNewest) {
  run_in_one_rank([] {
    const int device = core::platform().current_device();
    auto& cache = DeviceBlockCache::instance();
    // Fill the cache with blocks of one size, then give back one of another size.
    std::vector<DeviceBlock> old_blocks;
    for (size_t i = 0; i < DeviceBlockCache::kMaxKeptBlocks; ++i) {
      old_blocks.push_back(cache.take(other_size(), device));
    }
    void* oldest = old_blocks.front().pointer;
    for (auto& block : old_blocks) cache.give(std::move(block));
    DeviceBlock newest = cache.take(small_size(), device);  // none kept fits: a new one
    void* newest_pointer = newest.pointer;
    cache.give(std::move(newest));
    // The newest is kept; the oldest of the full cache made room for it.
    DeviceBlock again = cache.take(small_size(), device);
    EXPECT_EQ(again.pointer, newest_pointer);
    std::vector<DeviceBlock> taken;
    bool oldest_kept = false;
    for (size_t i = 0; i + 1 < DeviceBlockCache::kMaxKeptBlocks; ++i) {
      taken.push_back(cache.take(other_size(), device));
      if (taken.back().pointer == oldest) oldest_kept = true;
    }
    EXPECT_FALSE(oldest_kept) << "the block given back first should have left the full cache";
    cache.give(std::move(again));
    for (auto& block : taken) cache.give(std::move(block));
  });
}

}  // namespace
}  // namespace memloom::opstest
