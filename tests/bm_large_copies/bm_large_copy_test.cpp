// BM copies large enough to run on two threads (TwoThreadCopier::kDefaultThreshold and more), at
// odd sizes and unaligned offsets, checked byte-exact: single copies (H2G, G2H, G2G) and a batch
// mixing large and small entries, sync and async, on one node and across two emulated nodes
// (where the peer's pieces go through the transport and only this rank's own pieces split).
#include <gtest/gtest.h>

#include <cstring>

#include "src/base/two_thread_copier.h"
#include "tests/bm_large_copies/position_pattern.h"
#include "tests/smem/bm_test_util.h"

namespace memloom::testing {
namespace {

constexpr uint64_t kDeviceSlot = 12 * kMiB;
constexpr size_t kThreshold = base::TwoThreadCopier::kDefaultThreshold;

// `bytes` at `gva` equal `expected`, read back with G2H into a buffer whose neighbouring bytes
// must stay untouched.
void expect_contents(smem_bm_t bm, const char* gva, const uint8_t* expected, size_t bytes,
                     uint32_t flags, const std::string& what) {
  std::vector<uint8_t> seen(bytes + 2, 0xee);
  ASSERT_SMEM_OK(bm_copy(bm, gva, seen.data() + 1, bytes, SMEMB_COPY_G2H, flags));
  if (flags != 0) ASSERT_SMEM_OK(smem_bm_wait(bm));
  EXPECT_EQ(0, std::memcmp(seen.data() + 1, expected, bytes)) << what;
  EXPECT_EQ(seen.front(), 0xee) << what << ": the byte before the copy changed";
  EXPECT_EQ(seen.back(), 0xee) << what << ": the byte after the copy changed";
}

void check_large_copies(const RankContext& ctx, bool async) {
  ASSERT_SMEM_OK(bm_init_rank(ctx));
  const int n = ctx.world_size;
  smem_bm_t bm = smem_bm_create(3, n, SMEMB_DATA_OP_SDMA, kSlot, kDeviceSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
  StoreBarrier barrier(ctx);
  barrier.wait();  // every rank joined

  const uint32_t flags = async ? ASYNC_COPY_FLAG : 0;
  const size_t region = kDeviceSlot / static_cast<size_t>(n);  // rank r writes region r only
  const int peer = (ctx.rank + 1) % n;
  char* in_peer = device_slot(bm, peer) + ctx.rank * region;
  char* in_mine = device_slot(bm, ctx.rank) + ctx.rank * region;

  // One copy each way, then G2G from the peer's slot into this rank's own.
  const size_t big = kThreshold + kMiB + 4097;
  const auto source = position_pattern(big + 5, 1 + static_cast<uint64_t>(ctx.rank));
  const uint8_t* from = source.data() + 5;
  ASSERT_SMEM_OK(bm_copy(bm, from, in_peer + 3, big, SMEMB_COPY_H2G, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  expect_contents(bm, in_peer + 3, from, big, flags, "H2G then G2H");
  ASSERT_SMEM_OK(bm_copy(bm, in_peer + 3, in_mine + 11, big, SMEMB_COPY_G2G, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  expect_contents(bm, in_mine + 11, from, big, flags, "G2G");

  // A batch: two large entries (to the peer, to this rank) around a small one.
  const size_t large_a = kThreshold + 1, small = 1000, large_b = kThreshold + 333;
  const auto batch_source = position_pattern(large_a + small + large_b + 64, 50 + ctx.rank);
  const uint8_t* a = batch_source.data() + 1;
  const uint8_t* s = a + large_a + 13;
  const uint8_t* b = s + small + 17;
  std::vector<void*> sources{const_cast<uint8_t*>(a), const_cast<uint8_t*>(s),
                             const_cast<uint8_t*>(b)};
  std::vector<void*> destinations{in_peer + 1, in_peer + large_a + 4096, in_mine + 7};
  std::vector<uint64_t> sizes{large_a, small, large_b};
  smem_batch_copy_params params{sources.data(), destinations.data(), sizes.data(), 3};
  ASSERT_SMEM_OK(smem_bm_copy_batch(bm, &params, SMEMB_COPY_H2G, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  expect_contents(bm, in_peer + 1, a, large_a, flags, "batch entry 0 (large, to the peer)");
  expect_contents(bm, in_peer + large_a + 4096, s, small, flags, "batch entry 1 (small)");
  expect_contents(bm, in_mine + 7, b, large_b, flags, "batch entry 2 (large, to this rank)");

  barrier.wait();  // nobody leaves while the other still copies to it
  ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

TEST(BmLargeCopies, SyncOnOneNode) {
  auto results =
      run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) { check_large_copies(ctx, false); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmLargeCopies, AsyncOnOneNode) {
  auto results =
      run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) { check_large_copies(ctx, true); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmLargeCopies, SyncAcrossTwoNodes) {
  auto results = run_ranks(ranks_on_nodes(2, 2),
                           [](const RankContext& ctx) { check_large_copies(ctx, false); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmLargeCopies, AsyncAcrossTwoNodes) {
  auto results = run_ranks(ranks_on_nodes(2, 2),
                           [](const RankContext& ctx) { check_large_copies(ctx, true); });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
