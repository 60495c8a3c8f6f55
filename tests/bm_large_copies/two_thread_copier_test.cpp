// TwoThreadCopier on its own: large copies split over the caller and a helper thread arrive
// byte-exact at odd sizes and unaligned offsets; overlapping ranges, concurrent callers and a
// forked child fall back to one thread and stay correct.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "src/base/streaming_copy.h"
#include "src/base/two_thread_copier.h"
#include "tests/bm_large_copies/position_pattern.h"

namespace memloom::testing {
namespace {

using base::TwoThreadCopier;

// A small threshold and an odd chunk so that the last chunk is partial and chunks straddle
// every alignment.
constexpr size_t kThreshold = 64 * 1024;
constexpr size_t kChunk = 4099;

// The pieces' copy: every size around the 16-byte alignment and 64-byte block boundaries, at
// every destination and source misalignment, leaves the bytes around the target untouched.
TEST(BmTwoThreadCopier, StreamingCopyIsExactAtEverySizeAndAlignment) {
  constexpr size_t kGuard = 64;
  for (size_t bytes = 0; bytes <= 200; ++bytes) {
    for (size_t dst_offset = 0; dst_offset < 17; ++dst_offset) {
      for (size_t src_offset : {0, 1, 8, 15}) {
        std::vector<unsigned char> source(bytes + 32), target(bytes + 2 * kGuard + 32, 0xee);
        for (size_t i = 0; i < source.size(); ++i)
          source[i] = static_cast<unsigned char>(i * 7 + 1);
        base::streaming_copy(target.data() + kGuard + dst_offset, source.data() + src_offset,
                             bytes);
        for (size_t i = 0; i < target.size(); ++i) {
          const bool inside = i >= kGuard + dst_offset && i < kGuard + dst_offset + bytes;
          const unsigned char expected =
              inside ? source[src_offset + (i - kGuard - dst_offset)] : 0xee;
          ASSERT_EQ(target[i], expected) << bytes << " bytes, dst +" << dst_offset << ", src +"
                                         << src_offset << ", byte " << i;
        }
      }
    }
  }
}

TEST(BmTwoThreadCopier, SplitsOnlyLargeDisjointCopies) {
  TwoThreadCopier copier(kThreshold, kChunk);
  std::vector<char> a(4 * kThreshold), b(4 * kThreshold);
  EXPECT_TRUE(copier.splits(b.data(), a.data(), kThreshold));
  EXPECT_FALSE(copier.splits(b.data(), a.data(), kThreshold - 1));
  EXPECT_FALSE(copier.splits(a.data() + 1, a.data(), kThreshold));  // overlapping
  EXPECT_FALSE(copier.splits(a.data(), a.data() + kThreshold - 1, kThreshold));
  EXPECT_TRUE(copier.splits(a.data() + kThreshold, a.data(), kThreshold));  // adjacent
}

TEST(BmTwoThreadCopier, OddSizesAtUnalignedOffsetsArriveByteExact) {
  TwoThreadCopier copier(kThreshold, kChunk);
  for (size_t bytes :
       {kThreshold - 1, kThreshold, kThreshold + 1, 37 * kChunk + 5, 3 * kThreshold + 12345}) {
    for (size_t src_offset : {0, 1, 7}) {
      const size_t dst_offset = 3;
      const auto source = position_pattern(bytes + src_offset, bytes + src_offset);
      std::vector<uint8_t> target(bytes + dst_offset + 64, 0xee);
      copier.copy(target.data() + dst_offset, source.data() + src_offset, bytes);
      ASSERT_EQ(0, std::memcmp(target.data() + dst_offset, source.data() + src_offset, bytes))
          << bytes << " bytes from offset " << src_offset;
      for (size_t i = 0; i < dst_offset; ++i) ASSERT_EQ(target[i], 0xee) << "byte before, " << i;
      for (size_t i = dst_offset + bytes; i < target.size(); ++i) {
        ASSERT_EQ(target[i], 0xee) << "byte after the copy, at " << i;
      }
    }
  }
}

TEST(BmTwoThreadCopier, OverlappingRangesKeepMemmoveSemantics) {
  TwoThreadCopier copier(kThreshold, kChunk);
  const size_t bytes = 2 * kThreshold + 3, shift = 1001;
  const auto original = position_pattern(bytes + shift, 11);
  auto buffer = original;
  copier.copy(buffer.data() + shift, buffer.data(), bytes);  // forwards overlap
  EXPECT_EQ(0, std::memcmp(buffer.data() + shift, original.data(), bytes));
  buffer = original;
  copier.copy(buffer.data(), buffer.data() + shift, bytes);  // backwards overlap
  EXPECT_EQ(0, std::memcmp(buffer.data(), original.data() + shift, bytes));
}

TEST(BmTwoThreadCopier, ConcurrentCallersAllArrive) {
  TwoThreadCopier copier(kThreshold, kChunk);
  constexpr int kThreads = 4, kRounds = 20;
  const size_t bytes = 5 * kThreshold + 77;
  std::vector<std::vector<uint8_t>> sources, targets;
  for (int t = 0; t < kThreads; ++t) {
    sources.push_back(position_pattern(bytes, 100 + static_cast<uint64_t>(t)));
    targets.emplace_back(bytes);
  }
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::memset(targets[t].data(), 0, bytes);
        copier.copy(targets[t].data(), sources[t].data(), bytes);
        if (targets[t] != sources[t]) ++wrong[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// The child inherits the copier (and its started helper's state) but not the helper thread: its
// copies run on one thread, and destroying the inherited copier must not wait for the thread.
TEST(BmTwoThreadCopier, ForkedChildCopiesWithoutTheParentsHelper) {
  auto copier = std::make_unique<TwoThreadCopier>(kThreshold, kChunk);
  const size_t bytes = 3 * kThreshold + 1;
  const auto source = position_pattern(bytes, 5);
  std::vector<uint8_t> target(bytes);
  copier->copy(target.data(), source.data(), bytes);  // starts the helper
  ASSERT_EQ(target, source);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<uint8_t> mine(bytes);
    copier->copy(mine.data(), source.data(), bytes);
    const bool same = mine == source;
    copier.reset();
    ::_exit(same ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's copy was wrong";
  std::fill(target.begin(), target.end(), 0);
  copier->copy(target.data(), source.data(), bytes);  // the parent's helper still works
  EXPECT_EQ(target, source);
}

}  // namespace
}  // namespace memloom::testing
