// What programs written for MemFabric Hybrid rely on, beyond the signatures: config defaults,
// error code values, the order in which arguments are checked, and when smem_bm_join returns.
// Written from MemFabric's documented behaviour and headers (issue 18, items 6-11 and 16).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "smem/host/smem_trans.h"
#include "tests/smem/bm_test_util.h"

namespace memloom::testing {
namespace {

TEST(UpstreamCompat, ErrorCodesHaveMemFabricsValues) {
  EXPECT_EQ(SMEM_SUCCESS, 0);
  EXPECT_EQ(SMEM_ERROR, -1);
  EXPECT_EQ(SMEM_INVALID_PARAM, -2000);
  EXPECT_EQ(SMEM_MALLOC_FAILED, -2001);
  EXPECT_EQ(SMEM_TIMEOUT, -2004);
  EXPECT_EQ(SMEM_REPEAT_CALL, -2005);
  EXPECT_EQ(SMEM_NOT_FOUND, -2007);
  EXPECT_EQ(SMEM_NOT_INITIALIZED, -2008);
  // The functions return them, not only the header: a call before init.
  int fake = 0;
  EXPECT_EQ(smem_bm_wait(&fake), -2008);
  // smem_init's flags are reserved and ignored, as MemFabric's.
  EXPECT_EQ(smem_init(1), 0);
  smem_uninit();
  EXPECT_EQ(smem_bm_join(nullptr, 0, nullptr), -2000);
}

TEST(UpstreamCompat, ShmAndTransConfigInitSetMemFabricsDefaults) {
  smem_shm_config_t shm;
  std::memset(&shm, 0x5a, sizeof(shm));
  ASSERT_EQ(smem_shm_config_init(&shm), 0);
  EXPECT_EQ(shm.shmInitTimeout, 120u);
  EXPECT_EQ(shm.shmCreateTimeout, 120u);
  EXPECT_EQ(shm.controlOperationTimeout, 120u);
  EXPECT_TRUE(shm.startConfigStoreServer);
  EXPECT_EQ(shm.flags, 0u);
  smem_trans_config_t trans;
  std::memset(&trans, 0x5a, sizeof(trans));
  ASSERT_EQ(smem_trans_config_init(&trans), 0);
  EXPECT_EQ(trans.role, SMEM_TRANS_SENDER);
  EXPECT_EQ(trans.initTimeout, 120u);
  EXPECT_EQ(trans.deviceId, UINT32_MAX);
  EXPECT_EQ(trans.flags, 0u);
  EXPECT_FALSE(trans.startConfigServer);
  // MemFabric does not set dataOpType; memloom sets 0, which every call takes as the default.
  EXPECT_EQ(static_cast<uint32_t>(trans.dataOpType), 0u);
}

TEST(UpstreamCompat, ChecksComeInMemFabricsOrder) {
  int fake = 0;
  // A fake handle and a zero batch before init: not initialised, not a bad batch.
  smem_batch_copy_params zero{nullptr, nullptr, nullptr, 0};
  EXPECT_EQ(smem_bm_copy_batch(&fake, &zero, SMEMB_COPY_H2G, 0), SMEM_NOT_INITIALIZED);
  // A bad copy type on a fake handle before init: not initialised too.
  smem_copy_params params{&fake, &fake, 4};
  EXPECT_EQ(smem_bm_copy(&fake, &params, static_cast<smem_bm_copy_type>(77), 0),
            SMEM_NOT_INITIALIZED);
  // Address 0 is refused before init is checked.
  EXPECT_EQ(smem_bm_register_user_mem(&fake, 0, 4096), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_bm_register_user_mem(&fake, 4096, 4096), SMEM_NOT_INITIALIZED);
  // SHM: pointer arguments first, then init.
  EXPECT_EQ(smem_shm_set_extra_context(&fake, nullptr, 4), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_shm_control_allgather(&fake, nullptr, 4, nullptr, 4), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_shm_topology_can_reach(&fake, 0, nullptr), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_shm_register_exit(&fake, nullptr), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_shm_control_barrier(&fake), SMEM_NOT_INITIALIZED);
  // TRANS answers a call before smem_trans_init with invalid-parameter, as MemFabric does.
  smem_trans_uninit(0);
  char buffer[8] = {};
  EXPECT_EQ(smem_trans_register_mem(&fake, buffer, sizeof(buffer), 0), SMEM_INVALID_PARAM);
  // The rank of a GVA on failure is the code, cast.
  EXPECT_EQ(smem_bm_get_rank_id_by_gva(&fake, buffer), static_cast<uint32_t>(SMEM_NOT_INITIALIZED));
  EXPECT_EQ(smem_bm_get_rank_id_by_gva(nullptr, buffer), static_cast<uint32_t>(SMEM_INVALID_PARAM));
}

smem_bm_config_t fixed_rank_config(const RankContext& ctx, uint32_t control_timeout_s = 20) {
  smem_bm_config_t config = bm_test_config(control_timeout_s);
  config.rankId = static_cast<uint16_t>(ctx.rank);
  config.autoRanking = false;
  return config;
}

TEST(UpstreamCompat, BmInitRefusesASplitAddressSpaceAndRepeatsQuietly) {
  auto results = run_ranks(ranks_on_nodes(1), [](const RankContext& ctx) {
    smem_bm_config_t config = fixed_rank_config(ctx);
    config.unifiedAddressSpace = false;
    EXPECT_EQ(smem_bm_init(ctx.store_url.c_str(), 1, 0, &config), SMEM_INVALID_PARAM);
    EXPECT_TRUE(last_error_contains("unifiedAddressSpace")) << smem_get_last_err_msg();
    config.unifiedAddressSpace = true;
    ASSERT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), 1, 0, &config));
    // A second init succeeds and changes nothing, as MemFabric's.
    EXPECT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), 1, 0, &config));
    EXPECT_EQ(smem_bm_get_rank_id(), 0u);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// memberSize 0 (what MemFabric's examples pass), the first join, then at once a copy into every
// peer's slot and a read of what the previous rank wrote: the join is where the world meets.
void join_then_copy_to_every_peer(const RankContext& ctx) {
  smem_bm_config_t config = fixed_rank_config(ctx);
  ASSERT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), static_cast<uint32_t>(ctx.world_size),
                              static_cast<uint16_t>(ctx.device()), &config));
  smem_bm_t bm = smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  // Ranks arrive at join at different times; every join returns once all have joined.
  if (ctx.rank == ctx.world_size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  void* mine = nullptr;
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, &mine));
  EXPECT_EQ(mine, device_slot(bm, ctx.rank));
  std::vector<uint8_t> data(4096, static_cast<uint8_t>(ctx.rank + 1));
  for (int peer = 0; peer < ctx.world_size; ++peer) {
    char* target = host_slot(bm, peer) + ctx.rank * data.size();
    EXPECT_SMEM_OK(bm_copy(bm, data.data(), target, data.size(), SMEMB_COPY_H2GH));
  }
  StoreBarrier barrier(ctx);
  barrier.wait();
  std::vector<uint8_t> seen(data.size());
  const int previous = (ctx.rank + ctx.world_size - 1) % ctx.world_size;
  ASSERT_SMEM_OK(bm_copy(bm, host_slot(bm, ctx.rank) + previous * data.size(), seen.data(),
                         seen.size(), SMEMB_COPY_GH2H));
  EXPECT_EQ(seen, std::vector<uint8_t>(data.size(), static_cast<uint8_t>(previous + 1)));
  barrier.wait();
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

// A rank that leaves and joins again is reachable by every peer when its join returns: it tells
// the others through the store right after, and they copy to it at once.
void rejoin_is_visible_at_once(const RankContext& ctx) {
  smem_bm_config_t config = fixed_rank_config(ctx);
  ASSERT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), static_cast<uint32_t>(ctx.world_size),
                              static_cast<uint16_t>(ctx.device()), &config));
  smem_bm_t bm = smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
  StoreBarrier barrier(ctx);
  std::vector<uint8_t> data(4096, 7);
  for (int round = 0; round < 20; ++round) {
    const std::string key = "rejoined/" + ctx.job_id + "/" + std::to_string(round);
    if (ctx.rank == 1) {
      ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
      barrier.wait();  // left
      barrier.wait();  // the others saw it gone
      ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
      barrier.client().set(key, "1");
    } else {
      barrier.wait();
      EXPECT_EQ(bm_copy(bm, data.data(), host_slot(bm, 1), data.size(), SMEMB_COPY_H2GH),
                SMEM_NOT_FOUND);
      barrier.wait();
      ASSERT_TRUE(barrier.client().get(key, std::chrono::seconds(10)).has_value());
      EXPECT_SMEM_OK(bm_copy(bm, data.data(), host_slot(bm, 1), data.size(), SMEMB_COPY_H2GH));
    }
    barrier.wait();
  }
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

// Three ranks on one node, and four on two (same-node peers by mapping, the others by transport).
class UpstreamCompatJoin : public ::testing::TestWithParam<int> {
 protected:
  MultiProcessOptions layout() const {
    return GetParam() == 1 ? ranks_on_nodes(3) : ranks_on_nodes(4, 2);
  }
};

TEST_P(UpstreamCompatJoin, FirstJoinMeetsEveryRank) {
  EXPECT_ALL_RANKS_PASS(run_ranks(layout(), join_then_copy_to_every_peer));
}

TEST_P(UpstreamCompatJoin, RejoinIsVisibleToEveryPeer) {
  EXPECT_ALL_RANKS_PASS(run_ranks(layout(), rejoin_is_visible_at_once));
}

INSTANTIATE_TEST_SUITE_P(Nodes, UpstreamCompatJoin, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 1 ? std::string("OneNode")
                                                  : std::string("TwoNodes");
                         });

// A member that never joins: the others' first join fails at the control timeout, naming it.
TEST(UpstreamCompat, FirstJoinTimesOutNamingTheMissingRanks) {
  auto results = run_ranks(ranks_on_nodes(3), [](const RankContext& ctx) {
    smem_bm_config_t config = fixed_rank_config(ctx, 2);
    ASSERT_SMEM_OK(
        smem_bm_init(ctx.store_url.c_str(), 3, static_cast<uint16_t>(ctx.device()), &config));
    smem_bm_t bm = smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    StoreBarrier barrier(ctx);
    if (ctx.rank != 2) {
      const auto start = std::chrono::steady_clock::now();
      EXPECT_SMEM_FAILS(smem_bm_join(bm, 0, nullptr), SMEM_TIMEOUT, "rank(s) 2 to join");
      const auto took = std::chrono::steady_clock::now() - start;
      EXPECT_GE(took, std::chrono::milliseconds(1900));
      EXPECT_LT(took, std::chrono::seconds(6));
      // Not joined: copying is refused as before a join.
      std::vector<uint8_t> data(64);
      EXPECT_EQ(bm_copy(bm, data.data(), device_slot(bm, ctx.rank), data.size(), SMEMB_COPY_H2G),
                SMEM_INVALID_PARAM);
    }
    barrier.wait();
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(UpstreamCompat, RankIdByGvaOutsideTheGvaIsTheCodeCast) {
  auto results = run_ranks(ranks_on_nodes(1), [](const RankContext& ctx) {
    smem_bm_config_t config = fixed_rank_config(ctx);
    ASSERT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), 1, 0, &config));
    smem_bm_t bm = smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    int on_stack = 0;
    EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, &on_stack), static_cast<uint32_t>(SMEM_INVALID_PARAM));
    EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, host_slot(bm, 0) + 5), 0u);
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
