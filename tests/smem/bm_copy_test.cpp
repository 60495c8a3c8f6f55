// BM copies: every copy type, sync and async, batches, on 1/2/4/8 ranks and across two emulated
// nodes (where copies to the other node's slots go through the transport).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/smem/bm_test_util.h"

namespace memloom::testing {
namespace {

// The addresses a BM object told the log it reaches other nodes through (its transport's own
// address: "ucx://..." from the UCX transport, "tcp://..." from the TCP one). Each forked rank
// has its own copy.
std::vector<std::string> transport_addresses;

void keep_transport_addresses(int level, const char* message) {
  (void)level;
  const std::string text = message;
  const std::string marker = "reaches other nodes through ";
  const size_t at = text.find(marker);
  if (at != std::string::npos) transport_addresses.push_back(text.substr(at + marker.size()));
}

// Starts a rank with the address of BM's transport logged.
void watch_transport_choice() {
  transport_addresses.clear();
  ASSERT_SMEM_OK(smem_set_extern_logger(keep_transport_addresses));
  ASSERT_SMEM_OK(smem_set_log_level(0));  // debug
}

void expect_transport(const char* scheme) {
  ASSERT_EQ(transport_addresses.size(), 1u) << "one object, one transport";
  EXPECT_EQ(transport_addresses[0].rfind(scheme, 0), 0u)
      << "the object's transport is " << transport_addresses[0] << ", not " << scheme;
}

// Every rank writes its own region of every peer's slots with L2G/H2G/L2GH/H2GH (sync or async),
// then reads the regions of its successor back with G2L/G2H/GH2L/GH2H, moves data between two
// peers with G2G, and checks AUTO in both directions.
void check_every_copy_type(const RankContext& ctx, int nodes, bool async,
                           uint32_t data_ops = SMEMB_DATA_OP_SDMA) {
  ASSERT_SMEM_OK(bm_init_rank(ctx));
  const int n = ctx.world_size;
  smem_bm_t bm = smem_bm_create(7, n, static_cast<smem_bm_data_op_type>(data_ops), kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  void* local_gva = nullptr;
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, &local_gva));
  EXPECT_EQ(local_gva, device_slot(bm, ctx.rank));
  StoreBarrier barrier(ctx);
  barrier.wait();  // every rank joined

  const uint32_t flags = async ? ASYNC_COPY_FLAG : 0;
  const size_t region = kSlot / n;  // rank w writes [w * region, (w + 1) * region) of each slot
  const size_t piece = region / 4;  // four copy types per region
  auto mine = pattern_buffer(ctx.rank, region);
  for (int peer = 0; peer < n; ++peer) {
    char* device = device_slot(bm, peer) + ctx.rank * region;
    char* host = host_slot(bm, peer) + ctx.rank * region;
    ASSERT_SMEM_OK(bm_copy(bm, mine.data(), device, 2 * piece, SMEMB_COPY_L2G, flags));
    ASSERT_SMEM_OK(
        bm_copy(bm, mine.data() + 2 * piece, device + 2 * piece, 2 * piece, SMEMB_COPY_H2G, flags));
    ASSERT_SMEM_OK(bm_copy(bm, mine.data(), host, 2 * piece, SMEMB_COPY_L2GH, flags));
    ASSERT_SMEM_OK(
        bm_copy(bm, mine.data() + 2 * piece, host + 2 * piece, 2 * piece, SMEMB_COPY_H2GH, flags));
  }
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  barrier.wait();

  const int writer = (ctx.rank + 1) % n;
  const auto expected = pattern_buffer(writer, region);
  for (int peer = 0; peer < n; ++peer) {
    char* device = device_slot(bm, peer) + writer * region;
    char* host = host_slot(bm, peer) + writer * region;
    std::vector<uint8_t> seen(region, 0);
    ASSERT_SMEM_OK(bm_copy(bm, device, seen.data(), 2 * piece, SMEMB_COPY_G2L, flags));
    ASSERT_SMEM_OK(
        bm_copy(bm, device + 2 * piece, seen.data() + 2 * piece, 2 * piece, SMEMB_COPY_G2H, flags));
    if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
    EXPECT_EQ(seen, expected) << "device slot of rank " << peer << ", region of rank " << writer;
    std::fill(seen.begin(), seen.end(), 0);
    ASSERT_SMEM_OK(bm_copy(bm, host, seen.data(), 2 * piece, SMEMB_COPY_GH2L, flags));
    ASSERT_SMEM_OK(
        bm_copy(bm, host + 2 * piece, seen.data() + 2 * piece, 2 * piece, SMEMB_COPY_GH2H, flags));
    if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
    EXPECT_EQ(seen, expected) << "host slot of rank " << peer << ", region of rank " << writer;
  }
  barrier.wait();

  // G2G: my region of peer a's device slot -> my region of peer b's host slot (both may be remote).
  const int a = (ctx.rank + 1) % n, b = (ctx.rank + n - 1) % n;
  auto second = pattern_buffer(ctx.rank, region, 3);
  ASSERT_SMEM_OK(bm_copy(bm, second.data(), device_slot(bm, a) + ctx.rank * region, region,
                         SMEMB_COPY_AUTO, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  ASSERT_SMEM_OK(bm_copy(bm, device_slot(bm, a) + ctx.rank * region,
                         host_slot(bm, b) + ctx.rank * region, region, SMEMB_COPY_G2G, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  std::vector<uint8_t> seen(region, 0);
  ASSERT_SMEM_OK(bm_copy(bm, host_slot(bm, b) + ctx.rank * region, seen.data(), region,
                         SMEMB_COPY_AUTO, flags));
  if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
  EXPECT_EQ(seen, second) << "G2G from rank " << a << " to rank " << b;

  // G2G with both sides on another node (read there, then written there again).
  for (int far = 0; far < n; ++far) {
    if (node_of(far, n, nodes) == node_of(ctx.rank, n, nodes)) continue;
    auto third = pattern_buffer(ctx.rank, region, 4);
    ASSERT_SMEM_OK(bm_copy(bm, third.data(), device_slot(bm, far) + ctx.rank * region, region,
                           SMEMB_COPY_H2G, flags));
    if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
    ASSERT_SMEM_OK(bm_copy(bm, device_slot(bm, far) + ctx.rank * region,
                           host_slot(bm, far) + ctx.rank * region, region, SMEMB_COPY_G2G, flags));
    if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
    ASSERT_SMEM_OK(bm_copy(bm, host_slot(bm, far) + ctx.rank * region, seen.data(), region,
                           SMEMB_COPY_GH2H, flags));
    if (async) ASSERT_SMEM_OK(smem_bm_wait(bm));
    EXPECT_EQ(seen, third) << "G2G within rank " << far << " on another node";
    break;
  }

  barrier.wait();  // nobody leaves while others still copy to it
  ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

class BmCopyRanks : public ::testing::TestWithParam<int> {};

TEST_P(BmCopyRanks, EveryCopyTypeSync) {
  auto results = run_ranks(ranks_on_nodes(GetParam()),
                           [](const RankContext& ctx) { check_every_copy_type(ctx, 1, false); });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(RankCounts, BmCopyRanks, ::testing::Values(1, 2, 4, 8));

TEST(BmCopies, EveryCopyTypeAsync) {
  auto results = run_ranks(ranks_on_nodes(2),
                           [](const RankContext& ctx) { check_every_copy_type(ctx, 1, true); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmTwoNodes, EveryCopyTypeSyncThroughTheTransport) {
  auto results = run_ranks(ranks_on_nodes(4, 2),
                           [](const RankContext& ctx) { check_every_copy_type(ctx, 2, false); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmTwoNodes, EveryCopyTypeAsyncThroughTheTransport) {
  auto results = run_ranks(ranks_on_nodes(2, 2),
                           [](const RankContext& ctx) { check_every_copy_type(ctx, 2, true); });
  EXPECT_ALL_RANKS_PASS(results);
}

// SMEMB_DATA_OP_ROCE (and DEVICE_RDMA) put the object's cross-node copies on the UCX transport:
// every copy type correct, and the transport that served them is UCX's (its address, as the object
// logged it). Without an RDMA NIC UCX moves them over its TCP.
class BmRdmaOps : public ::testing::TestWithParam<uint32_t> {};

TEST_P(BmRdmaOps, CopiesAcrossNodesGoThroughUcx) {
  const uint32_t ops = GetParam();
  auto results = run_ranks(ranks_on_nodes(2, 2), [ops](const RankContext& ctx) {
    watch_transport_choice();
    check_every_copy_type(ctx, 2, false, ops);
    expect_transport("ucx://");
  });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(DataOps, BmRdmaOps,
                         ::testing::Values(uint32_t(SMEMB_DATA_OP_ROCE),
                                           uint32_t(SMEMB_DATA_OP_SDMA |
                                                    SMEMB_DATA_OP_DEVICE_RDMA)));

// An object that asks for TCP (HOST_TCP) gets the same transport: UCX, which picks TCP where there
// is no RDMA; memloom has no TCP data path of its own.
TEST(BmTwoNodes, ObjectsAskingForTcpGoThroughUcx) {
  auto results = run_ranks(ranks_on_nodes(2, 2), [](const RankContext& ctx) {
    watch_transport_choice();
    check_every_copy_type(ctx, 2, true, SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP);
    expect_transport("ucx://");
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// A batch with a contiguous run (merged into one copy), scattered entries and several peers: once
// synchronously into the device range, once asynchronously into the host range.
void check_batches(const RankContext& ctx) {
  ASSERT_SMEM_OK(bm_init_rank(ctx));
  const int n = ctx.world_size;
  smem_bm_t bm = smem_bm_create(1, n, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
  StoreBarrier barrier(ctx);
  barrier.wait();

  const size_t region = kSlot / n, block = 512, blocks = region / block;
  // Blocks [0, blocks/2) are one contiguous run; after that every other block.
  std::vector<size_t> chosen;
  for (size_t i = 0; i < blocks / 2; ++i) chosen.push_back(i);
  for (size_t i = blocks / 2; i < blocks; i += 2) chosen.push_back(i);
  auto mine = pattern_buffer(ctx.rank, region, 1);
  for (bool async : {false, true}) {
    std::vector<void*> sources, destinations;
    std::vector<uint64_t> sizes;
    for (int peer = 0; peer < n; ++peer) {
      char* base = (async ? host_slot(bm, peer) : device_slot(bm, peer)) + ctx.rank * region;
      for (size_t i : chosen) {
        sources.push_back(mine.data() + i * block);
        destinations.push_back(base + i * block);
        sizes.push_back(block);
      }
    }
    smem_batch_copy_params params{sources.data(), destinations.data(), sizes.data(),
                                  static_cast<uint32_t>(sizes.size())};
    ASSERT_SMEM_OK(smem_bm_copy_batch(bm, &params, async ? SMEMB_COPY_AUTO : SMEMB_COPY_H2G,
                                      async ? ASYNC_COPY_FLAG : 0));
  }
  ASSERT_SMEM_OK(smem_bm_wait(bm));
  barrier.wait();

  // Every rank checks the blocks each writer put into its own slots.
  for (int writer = 0; writer < n; ++writer) {
    const auto expected = pattern_buffer(writer, region, 1);
    for (char* slot : {device_slot(bm, ctx.rank), host_slot(bm, ctx.rank)}) {
      std::vector<uint8_t> seen(region);
      ASSERT_SMEM_OK(bm_copy(bm, slot + writer * region, seen.data(), region, SMEMB_COPY_AUTO));
      for (size_t i : chosen) {
        EXPECT_EQ(0, std::memcmp(seen.data() + i * block, expected.data() + i * block, block))
            << "writer " << writer << ", block " << i;
      }
    }
  }

  // One bad entry refuses the whole batch and names it.
  std::vector<void*> bad_sources = {mine.data(), mine.data()};
  std::vector<void*> bad_destinations = {device_slot(bm, 0), device_slot(bm, 0) + kSlot - 8};
  std::vector<uint64_t> bad_sizes = {16, 16};
  smem_batch_copy_params bad{bad_sources.data(), bad_destinations.data(), bad_sizes.data(), 2};
  EXPECT_SMEM_FAILS(smem_bm_copy_batch(bm, &bad, SMEMB_COPY_H2G, 0), SMEM_INVALID_PARAM,
                    "batch entry 1");
  bad.batchSize = 0;
  EXPECT_SMEM_FAILS(smem_bm_copy_batch(bm, &bad, SMEMB_COPY_H2G, 0), SMEM_INVALID_PARAM,
                    "batchSize is 0");
  bad.batchSize = 2;
  bad.dataSizes = nullptr;
  EXPECT_SMEM_FAILS(smem_bm_copy_batch(bm, &bad, SMEMB_COPY_H2G, 0), SMEM_INVALID_PARAM, "null");
  EXPECT_SMEM_FAILS(smem_bm_copy_batch(bm, nullptr, SMEMB_COPY_H2G, 0), SMEM_INVALID_PARAM, "null");

  barrier.wait();
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

TEST(BmCopies, BatchesOnOneNode) {
  auto results = run_ranks(ranks_on_nodes(4), check_batches);
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmTwoNodes, BatchesAcrossNodes) {
  auto results = run_ranks(ranks_on_nodes(4, 2), check_batches);
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
