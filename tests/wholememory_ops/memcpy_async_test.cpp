// memloom_memcpy_async between host buffers: bad arguments, zero bytes, copies below and above the
// emulated copy engine's two-thread threshold (4 MiB) arriving byte-exact without touching their
// neighbours, stream order between copies, and the default stream. Each test runs in one forked
// rank, so the backend starts in a child as in the other tests of this binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memloom/stream.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

constexpr size_t kLarge = (12u << 20) + 3;  // above the threshold, not a multiple of a piece
constexpr size_t kSmall = 4099;
constexpr size_t kGuard = 64;  // bytes around a destination that must stay untouched

Bytes pattern(size_t bytes, int seed) {
  Bytes data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 11));
  return data;
}

// The first offset where `got` differs from `want` (SIZE_MAX if none): one readable failure
// instead of millions.
size_t first_difference(const uint8_t* got, const uint8_t* want, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] != want[i]) return i;
  }
  return SIZE_MAX;
}

// Copies `bytes` of a pattern at an odd offset into a buffer with guard bytes either side, on
// `stream`, and checks every byte after synchronize.
void check_copy(size_t bytes, memloom_stream_t stream, int seed) {
  const Bytes source = pattern(bytes + 1, seed);
  Bytes target(bytes + 2 * kGuard, 0xee);
  ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
            memloom_memcpy_async(target.data() + kGuard, source.data() + 1, bytes, stream));
  ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
  EXPECT_EQ(SIZE_MAX, first_difference(target.data() + kGuard, source.data() + 1, bytes))
      << bytes << " bytes";
  for (size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(0xee, target[i]) << "byte " << i << " before the destination was written";
    ASSERT_EQ(0xee, target[kGuard + bytes + i]) << "byte " << i << " after it was written";
  }
}

TEST(MemcpyAsync, NullPointersAreInvalidInput) {
  run_in_one_rank([] {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    Bytes buffer(16, 1);
    EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT,
              memloom_memcpy_async(nullptr, buffer.data(), 8, stream));
    EXPECT_NE(std::string::npos, log::last_error().find("dst is null")) << log::last_error();
    EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT,
              memloom_memcpy_async(buffer.data(), nullptr, 8, stream));
    EXPECT_NE(std::string::npos, log::last_error().find("src is null")) << log::last_error();
    EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_memcpy_async(nullptr, nullptr, 1, nullptr));
    // A refused copy enqueued nothing, so the stream has nothing to report.
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
}

TEST(MemcpyAsync, ZeroBytesSucceedsAndCopiesNothing) {
  run_in_one_rank([] {
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_memcpy_async(nullptr, nullptr, 0, nullptr));
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    Bytes from(8, 1), to(8, 2);
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_memcpy_async(to.data(), from.data(), 0, stream));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
    EXPECT_EQ(Bytes(8, 2), to);
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
}

TEST(MemcpyAsync, AStreamHandleThatIsNoStreamIsInvalidInput) {
  run_in_one_rank([] {
    // Only where the backend cannot adopt native streams: CUDA would take any pointer as a
    // cudaStream_t.
    if (core::platform().name() != "emulated") return;
    int not_a_stream = 0;
    Bytes from(8, 1), to(8, 2);
    EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT,
              memloom_memcpy_async(to.data(), from.data(), 8, &not_a_stream));
    EXPECT_EQ(Bytes(8, 2), to);
  });
}

TEST(MemcpyAsync, SmallAndLargeHostCopiesArriveByteExact) {
  run_in_one_rank([] {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    check_copy(1, stream, 3);
    check_copy(kSmall, stream, 5);
    check_copy(kLarge, stream, 7);
    // The default stream too.
    check_copy(kSmall, nullptr, 9);
    check_copy(kLarge, nullptr, 11);
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
}

// Copies on one stream run in the order they were enqueued: a large copy a -> b, then b -> c and
// small copies out of b, all enqueued before one synchronize. Any reordering leaves c or the
// small results holding b's old bytes.
TEST(MemcpyAsync, CopiesOnAStreamRunInOrder) {
  run_in_one_rank([] {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    const Bytes a = pattern(kLarge, 21);
    Bytes b(kLarge, 0), c(kLarge, 0), head(kSmall, 0), tail(kSmall, 0);
    for (int round = 0; round < 3; ++round) {
      std::fill(b.begin(), b.end(), 0);
      std::fill(c.begin(), c.end(), 0);
      ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_memcpy_async(b.data(), a.data(), kLarge, stream));
      ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_memcpy_async(c.data(), b.data(), kLarge, stream));
      ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
                memloom_memcpy_async(head.data(), b.data(), kSmall, stream));
      ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
                memloom_memcpy_async(tail.data(), b.data() + kLarge - kSmall, kSmall, stream));
      ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
      EXPECT_EQ(SIZE_MAX, first_difference(c.data(), a.data(), kLarge)) << "round " << round;
      EXPECT_EQ(SIZE_MAX, first_difference(head.data(), a.data(), kSmall)) << "round " << round;
      EXPECT_EQ(SIZE_MAX, first_difference(tail.data(), a.data() + kLarge - kSmall, kSmall))
          << "round " << round;
    }
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
}

}  // namespace
}  // namespace memloom::opstest
