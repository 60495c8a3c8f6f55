// A rank that never arrives: every init (and every collective create) of the others times out at
// its deadline, not before and not much later, and the init's message names the missing ranks.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/core/platform_loader.h"
#include "src/store/client.h"
#include "tests/faults/process_audit.h"
#include "tests/faults/scenarios.h"
#include "wholememory/wholememory.h"

namespace memloom::faults {
namespace {

constexpr auto kDeadline = std::chrono::seconds(kCallTimeoutSeconds);

// Four ranks are expected, three come: ranks 0, 1 and 3 (rank 2 never arrives).
constexpr int kWorld = 4;
constexpr int kMissing = 2;

int world_rank(const testing::RankContext& rank) {
  return rank.rank < kMissing ? rank.rank : rank.rank + 1;
}

void run_without_rank_two(const std::function<CallResult(const testing::RankContext&)>& init,
                          const std::string& names_missing) {
  JobAudit job;
  ForkedBarrier backends_up;
  testing::MultiProcessOptions options;
  options.ranks = kWorld - 1;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.store_url = job_store_url();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    // Every present rank's backend is up before the audit's baseline and anyone's clock: on a
    // loaded GPU machine bringing up CUDA took seconds, and a rank still doing so looked missing
    // to the others (which named it as well as rank 2).
    core::platform();
    backends_up.wait(kWorld - 1);
    RankAudit audit;
    const auto start = Clock::now();
    CallResult result = init(rank);
    const auto took = Clock::now() - start;
    EXPECT_TRUE(result.failed()) << "init succeeded without rank " << kMissing;
    EXPECT_GE(took, kDeadline - std::chrono::milliseconds(100)) << "gave up before its deadline";
    EXPECT_LT(took, kDeadline + kSlack) << "overran its deadline";
    EXPECT_NE(result.message.find(names_missing), std::string::npos)
        << "the message does not name the missing rank: " << result.message;
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after the failed init");
  });
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

TEST(MissingRank, CoreGroupNamesTheMissingRank) {
  run_without_rank_two(
      [](const testing::RankContext& rank) {
        std::shared_ptr<store::Client> client = store::Client::connect(rank.store_url);
        return core_call([&] {
          core::Group::create(client, store::KeyPrefix(rank.job_id + "/group/"), world_rank(rank),
                              kWorld, Deadline::after(kDeadline));
        });
      },
      "rank(s) 2 ");
}

TEST(MissingRank, ShmInitNamesTheMissingRank) {
  run_without_rank_two(
      [](const testing::RankContext& rank) {
        smem_shm_config_t config;
        smem_shm_config_init(&config);
        config.startConfigStoreServer = false;
        config.shmInitTimeout = kCallTimeoutSeconds;
        CallResult result = smem_result(
            smem_shm_init(rank.store_url.c_str(), kWorld, world_rank(rank), 0, &config));
        EXPECT_EQ(result.code, SMEM_TIMEOUT) << result.message;
        smem_shm_uninit(0);
        return result;
      },
      "rank(s) 2 ");
}

TEST(MissingRank, BmInitNamesTheMissingRank) {
  run_without_rank_two(
      [](const testing::RankContext& rank) {
        smem_bm_config_t config;
        smem_bm_config_init(&config);
        config.startConfigStoreServer = false;
        config.initTimeout = kCallTimeoutSeconds;
        config.rankId = static_cast<uint16_t>(world_rank(rank));
        config.autoRanking = false;
        CallResult result = smem_result(smem_bm_init(rank.store_url.c_str(), kWorld, 0, &config));
        EXPECT_EQ(result.code, SMEM_TIMEOUT) << result.message;
        smem_bm_uninit(0);
        return result;
      },
      "rank(s) 2 ");
}

TEST(MissingRank, WholeMemoryCommunicatorNamesTheMissingRank) {
  run_without_rank_two(
      [](const testing::RankContext& rank) {
        EXPECT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
        wholememory_unique_id_t id{};
        if (rank.rank == 0) {
          EXPECT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
          publish(rank.store_url, rank.job_id + "/id", std::string(id.internal, sizeof(id)));
        } else {
          std::memcpy(id.internal, await(rank.store_url, rank.job_id + "/id").data(), sizeof(id));
        }
        wholememory_comm_t comm = nullptr;
        auto code = wholememory_create_communicator(&comm, id, world_rank(rank), kWorld);
        CallResult result{static_cast<int>(code), log::last_error()};
        EXPECT_EQ(code, WHOLEMEMORY_COMMUNICATION_ERROR) << result.message;
        EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
        return result;
      },
      "rank(s) 2 ");
}

// Collective creation where one rank (alive, initialised) never makes the call: the others time
// out at the create deadline with a message, and everybody can still shut down.
void run_create_without_rank_two(
    const std::function<void(const testing::RankContext&)>& init,
    const std::function<CallResult(const testing::RankContext&)>& create,
    const std::function<void()>& shutdown) {
  JobAudit job;
  ForkedBarrier backends_up;
  ForkedBarrier others_done;
  testing::MultiProcessOptions options;
  options.ranks = 3;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.store_url = job_store_url();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    // As above: set-up runs under the short deadline too (the WholeMemory communicator timed out
    // on a loaded GPU machine while a rank was still creating its CUDA context).
    core::platform();
    backends_up.wait(options.ranks);
    RankAudit audit;
    init(rank);
    if (rank.rank != kMissing) {
      const auto start = Clock::now();
      CallResult result = create(rank);
      const auto took = Clock::now() - start;
      EXPECT_TRUE(result.failed()) << "create succeeded without rank " << kMissing;
      if (rank.rank == 0) std::printf("[missing rank] create failed: %s\n", result.message.c_str());
      EXPECT_FALSE(result.message.empty());
      EXPECT_GE(took, kDeadline - std::chrono::milliseconds(100)) << result.message;
      EXPECT_LT(took, kDeadline + kSlack) << result.message;
    }
    others_done.wait(rank.world_size);
    shutdown();
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

TEST(MissingRank, ShmCreateTimesOutAtItsDeadline) {
  run_create_without_rank_two(
      [](const testing::RankContext& rank) {
        smem_shm_config_t config;
        smem_shm_config_init(&config);
        config.startConfigStoreServer = false;
        config.shmInitTimeout = 20;
        config.shmCreateTimeout = kCallTimeoutSeconds;
        ASSERT_EQ(smem_shm_init(rank.store_url.c_str(), rank.world_size, rank.rank, 0, &config),
                  SMEM_SUCCESS)
            << smem_get_last_err_msg();
      },
      [](const testing::RankContext& rank) {
        void* gva = nullptr;
        smem_shm_t shm = smem_shm_create(0, 3, rank.rank, 2 << 20, SMEMS_DATA_OP_MTE, 0, &gva);
        return shm == nullptr ? CallResult{SMEM_ERROR, smem_get_last_err_msg()} : CallResult{};
      },
      [] { smem_shm_uninit(0); });
}

TEST(MissingRank, BmCreateTimesOutAtItsDeadline) {
  run_create_without_rank_two(
      [](const testing::RankContext& rank) {
        smem_bm_config_t config;
        smem_bm_config_init(&config);
        config.startConfigStoreServer = false;
        config.initTimeout = 20;
        config.createTimeout = kCallTimeoutSeconds;
        config.rankId = static_cast<uint16_t>(rank.rank);
        config.autoRanking = false;
        ASSERT_EQ(smem_bm_init(rank.store_url.c_str(), rank.world_size, 0, &config), SMEM_SUCCESS)
            << smem_get_last_err_msg();
      },
      [](const testing::RankContext&) {
        smem_bm_t bm = smem_bm_create(0, 3, SMEMB_DATA_OP_SDMA, 0, 2 << 20, 0);
        return bm == nullptr ? CallResult{SMEM_ERROR, smem_get_last_err_msg()} : CallResult{};
      },
      [] { smem_bm_uninit(0); });
}

TEST(MissingRank, WholeMemoryMallocTimesOutAtItsDeadline) {
  wholememory_comm_t comm = nullptr;
  run_create_without_rank_two(
      [&](const testing::RankContext& rank) {
        ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
        wholememory_unique_id_t id{};
        if (rank.rank == 0) {
          ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
          publish(rank.store_url, rank.job_id + "/id", std::string(id.internal, sizeof(id)));
        } else {
          std::memcpy(id.internal, await(rank.store_url, rank.job_id + "/id").data(), sizeof(id));
        }
        ASSERT_EQ(wholememory_create_communicator(&comm, id, rank.rank, rank.world_size),
                  WHOLEMEMORY_SUCCESS);
      },
      [&](const testing::RankContext&) {
        wholememory_handle_t handle = nullptr;
        auto code = wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_CHUNKED,
                                       WHOLEMEMORY_ML_HOST, 64);
        return code == WHOLEMEMORY_SUCCESS ? CallResult{}
                                           : CallResult{static_cast<int>(code), log::last_error()};
      },
      [] { EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS); });
}

}  // namespace
}  // namespace memloom::faults
