// SHM API: symmetric slots, extra context, barrier/allgather, sub-groups, atomic values, topology,
// global exit — on 1/2/4/8 ranks and on two emulated nodes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "tests/smem/shm_test_util.h"

namespace memloom::testing {
namespace {

constexpr uint64_t kSymmetric = 2 * kMiB;  // a multiple of every backend's granularity

TEST(ShmApi, ConfigInitSetsPublishedDefaults) {
  smem_shm_config_t config;
  std::memset(&config, 0xab, sizeof(config));
  ASSERT_SMEM_OK(smem_shm_config_init(&config));
  EXPECT_EQ(config.shmInitTimeout, 120u);
  EXPECT_EQ(config.shmCreateTimeout, 120u);
  EXPECT_EQ(config.controlOperationTimeout, 120u);
  EXPECT_TRUE(config.startConfigStoreServer);
  EXPECT_EQ(config.flags, 0u);
  EXPECT_SMEM_FAILS(smem_shm_config_init(nullptr), SMEM_INVALID_PARAM, "config is null");
  EXPECT_EQ(smem_shm_query_support_data_operation(),
            uint32_t(SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA));
}

TEST(ShmApi, CallsBeforeInitFailWithClearCodes) {
  void* gva = nullptr;
  EXPECT_EQ(smem_shm_create(0, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva), nullptr);
  EXPECT_TRUE(last_error_contains("smem_shm_init has not been called")) << smem_get_last_err_msg();
  EXPECT_SMEM_FAILS(smem_shm_control_barrier(nullptr), SMEM_INVALID_PARAM, "handle is null");
  int fake = 0;
  EXPECT_SMEM_FAILS(smem_shm_control_barrier(&fake), SMEM_NOT_INITIALIZED, "not been called");
  EXPECT_EQ(smem_shm_get_global_rank(&fake), UINT32_MAX);
  EXPECT_EQ(smem_shm_get_global_rank_size(nullptr), UINT32_MAX);
  // Arguments are checked before anything connects.
  smem_shm_config_t config = shm_test_config();
  EXPECT_SMEM_FAILS(smem_shm_init(nullptr, 1, 0, 0, &config), SMEM_INVALID_PARAM, "null");
  EXPECT_SMEM_FAILS(smem_shm_init("tcp://127.0.0.1:1", 0, 0, 0, &config), SMEM_INVALID_PARAM,
                    "worldSize 0");
  EXPECT_SMEM_FAILS(smem_shm_init("tcp://127.0.0.1:1", 1025, 0, 0, &config), SMEM_INVALID_PARAM,
                    "worldSize 1025");
  EXPECT_SMEM_FAILS(smem_shm_init("tcp://127.0.0.1:1", 4, 4, 0, &config), SMEM_INVALID_PARAM,
                    "rankId 4");
  config.controlOperationTimeout = 0;
  EXPECT_SMEM_FAILS(smem_shm_init("tcp://127.0.0.1:1", 1, 0, 0, &config), SMEM_INVALID_PARAM,
                    "controlOperationTimeout");
}

// Every rank writes its slot through gva + rank * size; every rank reads every same-node slot.
void check_symmetric_slots(const RankContext& ctx, int nodes,
                           uint32_t data_ops = SMEMS_DATA_OP_MTE) {
  ASSERT_SMEM_OK(shm_init_rank(ctx));
  const uint32_t n = static_cast<uint32_t>(ctx.world_size);
  void* gva = nullptr;
  smem_shm_t shm = smem_shm_create(3, n, ctx.rank, kSymmetric,
                                   static_cast<smem_shm_data_op_type>(data_ops), 0, &gva);
  ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
  ASSERT_NE(gva, nullptr);
  EXPECT_EQ(smem_shm_get_global_rank(shm), uint32_t(ctx.rank));
  EXPECT_EQ(smem_shm_get_global_rank_size(shm), n);
  EXPECT_EQ(smem_shm_get_symmetric_size(shm), kSymmetric);

  // The same base address in every process, across nodes too.
  uint64_t mine = reinterpret_cast<uintptr_t>(gva);
  std::vector<uint64_t> bases(n);
  ASSERT_SMEM_OK(smem_shm_control_allgather(shm, reinterpret_cast<const char*>(&mine), sizeof(mine),
                                            reinterpret_cast<char*>(bases.data()),
                                            n * sizeof(uint64_t)));
  for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(bases[r], mine) << "rank " << r << "'s gva differs";

  DeviceIo io(ctx.device());
  auto* base = static_cast<char*>(gva);
  const size_t probe = 64 * 1024;
  auto my_bytes = pattern_buffer(ctx.rank, probe);
  io.write(base + ctx.rank * kSymmetric, my_bytes.data(), probe);
  io.write_value<uint64_t>(base + ctx.rank * kSymmetric + kSymmetric - 8, 0xfeed0000u + ctx.rank);
  ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
  for (uint32_t r = 0; r < n; ++r) {
    uint32_t reach = 0;
    ASSERT_SMEM_OK(smem_shm_topology_can_reach(shm, r, &reach));
    const bool same_node = static_cast<int>(r) * nodes / ctx.world_size == ctx.node_index;
    if (!same_node) {
      EXPECT_EQ(reach, 0u) << "rank " << r << " is on another node";
      continue;
    }
    EXPECT_EQ(reach, uint32_t(SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA));
    std::vector<uint8_t> seen(probe);
    io.read(seen.data(), base + r * kSymmetric, probe);
    EXPECT_EQ(seen, pattern_buffer(static_cast<int>(r), probe)) << "slot of rank " << r;
    EXPECT_EQ(io.read_value<uint64_t>(base + r * kSymmetric + kSymmetric - 8), 0xfeed0000u + r);
  }
  ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
  ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
  EXPECT_SMEM_FAILS(smem_shm_control_barrier(shm), SMEM_INVALID_PARAM, "not a live shm object");
  smem_shm_uninit(0);
}

class ShmRanks : public ::testing::TestWithParam<int> {};

TEST_P(ShmRanks, SlotsAreSymmetricAndShared) {
  auto results = run_ranks(ranks_on_nodes(GetParam()),
                           [](const RankContext& ctx) { check_symmetric_slots(ctx, 1); });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(RankCounts, ShmRanks, ::testing::Values(1, 2, 4, 8));

TEST(ShmTwoNodes, SlotsAreSharedWithinEachNode) {
  auto results = run_ranks(ranks_on_nodes(4, 2),
                           [](const RankContext& ctx) { check_symmetric_slots(ctx, 2); });
  EXPECT_ALL_RANKS_PASS(results);
}

// SMEMS_DATA_OP_RDMA is accepted, alone and with the others; memloom's SHM has no data path across
// nodes, so the object is the same: same-node slots shared (MTE, SDMA), other nodes unreachable.
// And the query does not claim RDMA, which no SHM object would use.
TEST(ShmTwoNodes, RdmaObjectsAreAcceptedAndReachOnlySameNodeRanks) {
  for (uint32_t ops : {uint32_t(SMEMS_DATA_OP_RDMA),
                       uint32_t(SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA | SMEMS_DATA_OP_RDMA)}) {
    auto results = run_ranks(ranks_on_nodes(4, 2), [ops](const RankContext& ctx) {
      EXPECT_EQ(smem_shm_query_support_data_operation(),
                uint32_t(SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA));
      check_symmetric_slots(ctx, 2, ops);
    });
    EXPECT_ALL_RANKS_PASS(results) << "dataOpType " << ops;
  }
}

TEST(ShmTwoNodes, ExtraContextOfOtherNodesIsNotMapped) {
  auto results = run_ranks(ranks_on_nodes(2, 2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(0, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    const uint32_t other = 1 - ctx.rank;
    EXPECT_EQ(smem_shm_extra_context_addr(shm, other), nullptr);
    EXPECT_EQ(smem_shm_extra_context_size(shm, other), UINT32_MAX);
    EXPECT_TRUE(last_error_contains("another node")) << smem_get_last_err_msg();
    EXPECT_NE(smem_shm_extra_context_addr(shm, ctx.rank), nullptr);
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmObjects, ExtraContextIsReadableByEverySameNodeRank) {
  auto results = run_ranks(ranks_on_nodes(3), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(1, 3, ctx.rank, kSymmetric, SMEMS_DATA_OP_SDMA, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(smem_shm_extra_context_size(shm, r), 0u);
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));  // nobody sets a context before all have looked

    const uint32_t size = ctx.rank == 2 ? SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX : 100 + ctx.rank;
    auto context = pattern_buffer(ctx.rank, size, 5);
    ASSERT_SMEM_OK(smem_shm_set_extra_context(shm, context.data(), size));
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));

    DeviceIo io(ctx.device());
    for (uint32_t r = 0; r < 3; ++r) {
      void* address = smem_shm_extra_context_addr(shm, r);
      // The documented place: just below the GVA, one stride per rank.
      EXPECT_EQ(address, static_cast<char*>(gva) - (3 - r) * SMEM_SHM_EXTRA_CONTEXT_STRIDE);
      const uint32_t expected = r == 2 ? SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX : 100 + r;
      EXPECT_EQ(smem_shm_extra_context_size(shm, r), expected);
      EXPECT_EQ(
          io.read_value<uint32_t>(static_cast<char*>(address) + SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX),
          expected);
      std::vector<uint8_t> seen(expected);
      io.read(seen.data(), address, expected);
      EXPECT_EQ(seen, pattern_buffer(static_cast<int>(r), expected, 5)) << "context of rank " << r;
    }
    EXPECT_SMEM_FAILS(
        smem_shm_set_extra_context(shm, context.data(), SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX + 1),
        SMEM_INVALID_PARAM, "context size 65537");
    EXPECT_SMEM_FAILS(smem_shm_set_extra_context(shm, nullptr, 10), SMEM_INVALID_PARAM, "null");
    EXPECT_SMEM_FAILS(smem_shm_set_extra_context(shm, context.data(), 0), SMEM_INVALID_PARAM,
                      "context size 0");
    EXPECT_EQ(smem_shm_extra_context_addr(shm, 3), nullptr);
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmObjects, MismatchedSymmetricSizesFailOnEveryRank) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    const uint64_t size = ctx.rank == 0 ? kSymmetric : 2 * kSymmetric;
    EXPECT_EQ(smem_shm_create(0, 2, ctx.rank, size, SMEMS_DATA_OP_MTE, 0, &gva), nullptr);
    EXPECT_TRUE(last_error_contains("disagree on symmetricSize")) << smem_get_last_err_msg();
    // The failure left nothing behind: the same id works with agreeing sizes.
    smem_shm_t shm = smem_shm_create(0, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmObjects, BadArgumentsAreRefusedWithoutAllocating) {
  auto results = run_ranks(ranks_on_nodes(1), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    smem_shm_config_t config = shm_test_config();
    // As in MemFabric, a second init succeeds and changes nothing.
    EXPECT_SMEM_OK(smem_shm_init(ctx.store_url.c_str(), 1, 0, 0, &config));
    void* gva = nullptr;
    auto create = [&](uint32_t id, uint32_t size, uint32_t rank, uint64_t bytes, uint32_t ops) {
      return smem_shm_create(id, size, rank, bytes, static_cast<smem_shm_data_op_type>(ops), 0,
                             &gva);
    };
    EXPECT_EQ(create(64, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("id 64 is out of range")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 0, 0, kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("rankSize 0")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1025, 0, kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("rankSize 1025")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 1, kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("rankId 1")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 0, 0, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("symmetricSize 0")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 0, (64ull << 30) + kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("out of range")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 0, kSymmetric + 1, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("granularity")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 0, kSymmetric, 0), nullptr);
    EXPECT_TRUE(last_error_contains("dataOpType 0")) << smem_get_last_err_msg();
    EXPECT_EQ(create(0, 1, 0, kSymmetric, SMEMS_DATA_OP_RDMA << 1), nullptr);
    EXPECT_TRUE(last_error_contains("dataOpType 8 is not a set")) << smem_get_last_err_msg();
    EXPECT_EQ(smem_shm_create(0, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, nullptr), nullptr);
    EXPECT_TRUE(last_error_contains("gva is null")) << smem_get_last_err_msg();

    smem_shm_t shm = create(63, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(create(63, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE), nullptr);
    EXPECT_TRUE(last_error_contains("id 63 is in use")) << smem_get_last_err_msg();

    char send[8] = {}, receive[4] = {};
    EXPECT_SMEM_FAILS(smem_shm_control_allgather(shm, send, 8, receive, 4), SMEM_INVALID_PARAM,
                      "recvSize 4");
    EXPECT_SMEM_FAILS(smem_shm_control_allgather(shm, nullptr, 8, receive, 4), SMEM_INVALID_PARAM,
                      "null");
    EXPECT_SMEM_FAILS(smem_shm_subgroup_barrier(shm, "", 1, 0), SMEM_INVALID_PARAM, "key");
    EXPECT_SMEM_FAILS(smem_shm_subgroup_barrier(shm, "k", 1024, 0), SMEM_INVALID_PARAM,
                      "sub-group size 1024");
    EXPECT_SMEM_FAILS(smem_shm_subgroup_barrier(shm, nullptr, 1, 0), SMEM_INVALID_PARAM,
                      "key is null");
    uint32_t reach = 0;
    EXPECT_SMEM_FAILS(smem_shm_topology_can_reach(shm, 1, &reach), SMEM_INVALID_PARAM,
                      "remoteRank 1");
    EXPECT_SMEM_FAILS(smem_shm_topology_can_reach(shm, 0, nullptr), SMEM_INVALID_PARAM, "null");
    uint32_t value = UINT32_MAX;
    EXPECT_SMEM_FAILS(smem_shm_atomic_alloc_value(shm, 0, &value), SMEM_INVALID_PARAM, "limit 0");
    EXPECT_SMEM_FAILS(smem_shm_atomic_alloc_value(shm, SMEM_SHM_ATOMIC_NUM_LIMIT + 1, &value),
                      SMEM_INVALID_PARAM, "limit");
    EXPECT_SMEM_FAILS(smem_shm_atomic_release_value(shm, 5), SMEM_NOT_FOUND, "not allocated");
    EXPECT_SMEM_FAILS(smem_shm_register_exit(shm, nullptr), SMEM_INVALID_PARAM, "null");
    int fake = 0;
    EXPECT_SMEM_FAILS(smem_shm_control_barrier(&fake), SMEM_INVALID_PARAM, "not a live shm object");
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    EXPECT_SMEM_FAILS(smem_shm_destroy(shm, 0), SMEM_INVALID_PARAM, "already destroyed");
    smem_shm_uninit(0);
    EXPECT_SMEM_FAILS(smem_shm_control_barrier(shm), SMEM_NOT_INITIALIZED, "not been called");
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmObjects, ObjectsAndWorldsCanBeCreatedAgain) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    for (int round = 0; round < 2; ++round) {
      ASSERT_SMEM_OK(shm_init_rank(ctx));
      for (int again = 0; again < 2; ++again) {
        void* gva_a = nullptr;
        void* gva_b = nullptr;
        smem_shm_t a = smem_shm_create(5, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva_a);
        ASSERT_NE(a, nullptr) << smem_get_last_err_msg();
        smem_shm_t b =
            smem_shm_create(6, 2, ctx.rank, 2 * kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva_b);
        ASSERT_NE(b, nullptr) << smem_get_last_err_msg();
        EXPECT_NE(gva_a, gva_b);
        ASSERT_SMEM_OK(smem_shm_control_barrier(a));
        ASSERT_SMEM_OK(smem_shm_control_barrier(b));
        ASSERT_SMEM_OK(smem_shm_destroy(a, 0));
        ASSERT_SMEM_OK(smem_shm_destroy(b, 0));
      }
      smem_shm_uninit(0);
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmCollectives, AllgatherAndSubgroups) {
  auto results = run_ranks(ranks_on_nodes(4), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(2, 4, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();

    const uint64_t mine = 1000 + ctx.rank;
    uint64_t all[4] = {};
    ASSERT_SMEM_OK(smem_shm_control_allgather(shm, reinterpret_cast<const char*>(&mine), 8,
                                              reinterpret_cast<char*>(all), sizeof(all)));
    for (int r = 0; r < 4; ++r) EXPECT_EQ(all[r], 1000u + r);

    // Odd and even ranks, then the lower and upper halves: keys name the sub-groups.
    const char* parity = ctx.rank % 2 ? "odd" : "even";
    for (int i = 0; i < 3; ++i)
      ASSERT_SMEM_OK(smem_shm_subgroup_barrier(shm, parity, 2, ctx.rank / 2));
    const char* half = ctx.rank < 2 ? "low" : "high";
    uint64_t pair[2] = {};
    ASSERT_SMEM_OK(smem_shm_subgroup_allgather(shm, half, 2, ctx.rank % 2,
                                               reinterpret_cast<const char*>(&mine), 8,
                                               reinterpret_cast<char*>(pair), sizeof(pair)));
    const uint64_t first = ctx.rank < 2 ? 1000 : 1002;
    EXPECT_EQ(pair[0], first);
    EXPECT_EQ(pair[1], first + 1);
    // A key keeps its membership.
    EXPECT_SMEM_FAILS(smem_shm_subgroup_barrier(shm, parity, 2, 1 - ctx.rank / 2),
                      SMEM_INVALID_PARAM, "first used with rank");
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmCollectives, AllgatherSizeMismatchFailsEveryRank) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx, 5));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(2, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    char send[16] = {}, receive[32] = {};
    const auto start = std::chrono::steady_clock::now();
    EXPECT_SMEM_FAILS(smem_shm_control_allgather(shm, send, ctx.rank == 0 ? 8 : 16, receive, 32),
                      SMEM_INVALID_PARAM, "disagree on sendSize");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
    // A short receive buffer on one rank fails both.
    EXPECT_SMEM_FAILS(smem_shm_control_allgather(shm, send, 16, receive, ctx.rank == 1 ? 16 : 32),
                      SMEM_INVALID_PARAM, "recvSize");
    ASSERT_SMEM_OK(smem_shm_control_allgather(shm, send, 16, receive, 32));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Payloads above 64 KiB per rank take the allgather's two-step path (argument checks, then the
// data straight into recvBuf); it must gather correctly and fail every rank alike too.
TEST(ShmCollectives, LargeAllgatherGathersAndChecksArguments) {
  auto results = run_ranks(ranks_on_nodes(3, 2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx, 5));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(3, 3, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    constexpr uint32_t kBlock = 96 * 1024;
    std::vector<char> send(kBlock), receive(3 * kBlock);
    for (uint32_t i = 0; i < kBlock; ++i) send[i] = static_cast<char>(ctx.rank * 31 + i % 251);
    ASSERT_SMEM_OK(
        smem_shm_control_allgather(shm, send.data(), kBlock, receive.data(), 3 * kBlock));
    for (int r = 0; r < 3; ++r) {
      for (uint32_t i = 0; i < kBlock; i += 997) {
        ASSERT_EQ(receive[r * kBlock + i], static_cast<char>(r * 31 + i % 251)) << r << " " << i;
      }
    }
    EXPECT_SMEM_FAILS(smem_shm_control_allgather(shm, send.data(), kBlock, receive.data(),
                                                 ctx.rank == 2 ? 2 * kBlock : 3 * kBlock),
                      SMEM_INVALID_PARAM, "recvSize");
    EXPECT_SMEM_FAILS(
        smem_shm_control_allgather(shm, send.data(), ctx.rank == 1 ? kBlock - 8 : kBlock,
                                   receive.data(), 3 * kBlock),
        SMEM_INVALID_PARAM, "disagree on sendSize");
    ASSERT_SMEM_OK(
        smem_shm_control_allgather(shm, send.data(), kBlock, receive.data(), 3 * kBlock));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmCollectives, AtomicValuesAreUniqueAcrossRanks) {
  auto results = run_ranks(ranks_on_nodes(4), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(9, 4, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    uint32_t mine[2] = {UINT32_MAX, UINT32_MAX};
    for (auto& value : mine) ASSERT_SMEM_OK(smem_shm_atomic_alloc_value(shm, 8, &value));
    uint32_t all[8] = {};
    ASSERT_SMEM_OK(smem_shm_control_allgather(shm, reinterpret_cast<const char*>(mine),
                                              sizeof(mine), reinterpret_cast<char*>(all),
                                              sizeof(all)));
    std::set<uint32_t> distinct(all, all + 8);
    EXPECT_EQ(distinct.size(), 8u);
    EXPECT_EQ(*distinct.begin(), 0u);
    EXPECT_EQ(*distinct.rbegin(), 7u);
    uint32_t extra = UINT32_MAX;
    EXPECT_SMEM_FAILS(smem_shm_atomic_alloc_value(shm, 8, &extra), SMEM_ERROR, "already allocated");
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_atomic_release_value(shm, static_cast<int32_t>(mine[0])));
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    if (ctx.rank == 0) {
      ASSERT_SMEM_OK(smem_shm_atomic_alloc_value(shm, 8, &extra));  // one of the four released
      EXPECT_TRUE(extra == all[0] || extra == all[2] || extra == all[4] || extra == all[6]);
    }
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmFailures, DeadPeerFailsTheBarrierWithinTheControlTimeout) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx, 2));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(0, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    if (ctx.rank == 1) return;  // dies without destroying anything
    const auto start = std::chrono::steady_clock::now();
    int32_t rc = smem_shm_control_barrier(shm);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(rc == SMEM_COMM_ERROR || rc == SMEM_TIMEOUT)
        << rc << ": " << smem_get_last_err_msg();
    EXPECT_LT(elapsed, std::chrono::seconds(6)) << "the control timeout is 2 s";
    EXPECT_STRNE(smem_get_last_err_msg(), "");
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShmWorld, RankZeroStartsTheConfigStore) {
  MultiProcessOptions options = ranks_on_nodes(3);
  options.start_store = false;
  const std::string url = "tcp://127.0.0.1:" + std::to_string(free_tcp_port());
  auto results = run_ranks(options, [&](const RankContext& ctx) {
    smem_shm_config_t config = shm_test_config();
    config.startConfigStoreServer = true;  // only rank 0 acts on it
    ASSERT_SMEM_OK(smem_shm_init(url.c_str(), 3, ctx.rank, ctx.device(), &config));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(0, 3, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    // Rank 0's store must outlive the others' last use of it.
    smem_shm_t last = smem_shm_create(1, 3, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(last, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_shm_control_barrier(last));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

std::atomic<int> g_exit_status{-1};
void record_exit(int status) {
  g_exit_status.store(status);
}

TEST(ShmFailures, GlobalExitRunsEveryRanksExitFunction) {
  auto results = run_ranks(ranks_on_nodes(3), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(shm_init_rank(ctx));
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(4, 3, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_shm_register_exit(shm, record_exit));
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    if (ctx.rank == 1) {
      smem_shm_global_exit(shm, 42);
      EXPECT_EQ(g_exit_status.load(), 42) << "the caller's own function runs before returning";
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (g_exit_status.load() < 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(g_exit_status.load(), 42);
    ASSERT_SMEM_OK(smem_shm_control_barrier(shm));
    ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
