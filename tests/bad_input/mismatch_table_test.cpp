// Arguments that are valid on each rank but differ across ranks, for every collective that
// compares them: every rank must fail with the invalid-argument code and say the ranks disagree,
// and the group must stay usable afterwards.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "src/store/client.h"
#include "tests/bad_input/bad_input_table.h"
#include "tests/support/multi_process.h"
#include "wholememory/wholememory.h"

namespace memloom::bad_input {
namespace {

constexpr uint64_t kSlot = 2ull << 20;

struct Worlds {
  smem_shm_t shm = nullptr;
  wholememory_comm_t comm = nullptr;
};

Worlds join_worlds(const testing::RankContext& ctx) {
  Worlds worlds;
  smem_shm_config_t shm_config;
  smem_shm_config_init(&shm_config);
  shm_config.startConfigStoreServer = false;
  shm_config.shmInitTimeout = shm_config.shmCreateTimeout = 20;
  shm_config.controlOperationTimeout = 20;
  EXPECT_EQ(smem_shm_init(ctx.store_url.c_str(), 2, ctx.rank, 0, &shm_config), SMEM_SUCCESS)
      << smem_get_last_err_msg();
  void* gva = nullptr;
  worlds.shm = smem_shm_create(0, 2, ctx.rank, kSlot, SMEMS_DATA_OP_MTE, 0, &gva);
  EXPECT_NE(worlds.shm, nullptr) << smem_get_last_err_msg();

  smem_bm_config_t bm_config;
  smem_bm_config_init(&bm_config);
  bm_config.startConfigStoreServer = false;
  bm_config.initTimeout = bm_config.createTimeout = bm_config.controlOperationTimeout = 20;
  bm_config.rankId = static_cast<uint16_t>(ctx.rank);
  bm_config.autoRanking = false;
  EXPECT_EQ(smem_bm_init(ctx.store_url.c_str(), 2, 0, &bm_config), SMEM_SUCCESS)
      << smem_get_last_err_msg();

  EXPECT_EQ(wholememory_init(0, LEVEL_ERROR), WHOLEMEMORY_SUCCESS);
  wholememory_unique_id_t id{};
  auto client = store::Client::connect(ctx.store_url);
  const std::string key = ctx.job_id + "/wm-id";
  if (ctx.rank == 0) {
    EXPECT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
    client->set(key, std::string(id.internal, sizeof(id.internal)));
  } else {
    auto bytes = client->get(key, std::chrono::seconds(20));
    if (bytes) std::memcpy(id.internal, bytes->data(), sizeof(id.internal));
  }
  EXPECT_EQ(wholememory_create_communicator(&worlds.comm, id, ctx.rank, 2), WHOLEMEMORY_SUCCESS);
  return worlds;
}

TEST(BadInputTable, ArgumentsMismatchedAcrossRanks) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = std::chrono::seconds(60);
  options.env["MEMLOOM_EMU_DEVICE_MEM"] = "256M";
  auto results = testing::run_ranks(options, [](const testing::RankContext& ctx) {
    Worlds worlds = join_worlds(ctx);
    const bool one = ctx.rank == 1;
    std::vector<char> send(16, 1), receive(64);
    void* gva = nullptr;
    auto wm_malloc = [&](size_t total, wholememory_memory_type_t type, size_t granularity) {
      wholememory_handle_t handle = nullptr;
      auto code =
          wholememory_malloc(&handle, total, worlds.comm, type, WHOLEMEMORY_ML_HOST, granularity);
      if (handle != nullptr) wholememory_free(handle);
      return static_cast<int>(code);
    };
    std::vector<Row> smem_rows = {
        {"smem_shm_create", "symmetricSize differs",
         [&] {
           return failure_value(
               smem_shm_create(1, 2, ctx.rank, one ? 2 * kSlot : kSlot, SMEMS_DATA_OP_MTE, 0, &gva),
               smem_shm_t{nullptr});
         },
         kFailureValue, "disagree"},
        {"smem_shm_control_allgather", "sendSize differs",
         [&] {
           return smem_shm_control_allgather(worlds.shm, send.data(), one ? 16 : 8, receive.data(),
                                             64);
         },
         SMEM_INVALID_PARAM, "ranks disagree on sendSize"},
        {"smem_shm_subgroup_allgather", "sendSize differs",
         [&] {
           return smem_shm_subgroup_allgather(worlds.shm, "pair", 2, ctx.rank, send.data(),
                                              one ? 16 : 8, receive.data(), 64);
         },
         SMEM_INVALID_PARAM, "disagree"},
        {"smem_bm_create", "localHBMSize differs",
         [&] {
           return failure_value(
               smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, one ? 2 * kSlot : kSlot, 0),
               smem_bm_t{nullptr});
         },
         kFailureValue, "disagree"},
        {"smem_bm_create", "dataOpType differs",
         [&] {
           auto ops =
               static_cast<smem_bm_data_op_type>(one ? SMEMB_DATA_OP_HOST_TCP : SMEMB_DATA_OP_SDMA);
           return failure_value(smem_bm_create(0, 2, ops, 0, kSlot, 0), smem_bm_t{nullptr});
         },
         kFailureValue, "disagree"},
    };
    int count = run_rows(smem_rows, smem_messages());
    std::vector<Row> wm_rows = {
        {"wholememory_malloc", "total_size differs",
         [&] { return wm_malloc(one ? 2 << 20 : 1 << 20, WHOLEMEMORY_MT_CONTINUOUS, 64); },
         WHOLEMEMORY_INVALID_INPUT, "ranks passed different arguments; rank(s) 1 differ"},
        {"wholememory_malloc", "memory type differs",
         [&] {
           return wm_malloc(1 << 20, one ? WHOLEMEMORY_MT_CHUNKED : WHOLEMEMORY_MT_CONTINUOUS, 64);
         },
         WHOLEMEMORY_INVALID_INPUT, "ranks passed different arguments; rank(s) 1 differ"},
        {"wholememory_malloc", "granularity differs",
         [&] { return wm_malloc(1 << 20, WHOLEMEMORY_MT_DISTRIBUTED, one ? 128 : 64); },
         WHOLEMEMORY_INVALID_INPUT, "ranks passed different arguments; rank(s) 1 differ"},
    };
    count += run_rows(wm_rows, wholememory_messages());

    // Every group is still in step: the same calls with agreeing arguments work.
    EXPECT_EQ(smem_shm_control_allgather(worlds.shm, send.data(), 8, receive.data(), 64),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    smem_bm_t bm = smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    EXPECT_NE(bm, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(wm_malloc(1 << 20, WHOLEMEMORY_MT_CONTINUOUS, 64), WHOLEMEMORY_SUCCESS);
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
    smem_bm_uninit(0);
    smem_shm_uninit(0);
    if (ctx.rank == 0) std::printf("[bad input] mismatched across ranks: %d rows\n", count);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::bad_input
