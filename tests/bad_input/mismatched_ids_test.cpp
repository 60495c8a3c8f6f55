// Ranks given different object ids (smem_shm_create, smem_bm_create) or different WholeMemory
// unique ids wait in different groups and never meet. Where they can still see each other (one
// store and world, or one launcher job whose world the communicator spans), both ranks are told,
// with both values, by the first arrival's deadline plus a second, instead of timing out. Rank 0
// arrives first with a short deadline; rank 1 a second later with a long one, so that a rank 1
// that only times out fails the test.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "src/base/log.h"
#include "src/store/client.h"
#include "src/wholememory/unique_id.h"
#include "tests/support/multi_process.h"
#include "wholememory/wholememory.h"

namespace memloom::bad_input {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kSlot = 2ull << 20;
constexpr uint32_t kFirstDeadlineSeconds = 3;  // rank 0, which arrives first
constexpr uint32_t kLaterDeadlineSeconds = 8;  // rank 1, a second later
constexpr auto kLaterArrival = milliseconds(1000);
// The first arrival's deadline plus one second, from rank 0's start.
constexpr auto kToldBy = std::chrono::seconds(kFirstDeadlineSeconds + 1);

uint32_t deadline_seconds(int rank) {
  return rank == 0 ? kFirstDeadlineSeconds : kLaterDeadlineSeconds;
}

// Every rank arrives at the store barrier, then rank 1 waits kLaterArrival; `create` returns the
// error message ("" when it succeeded). Checks that it failed in time, saying `expected`.
void expect_told_in_time(const testing::RankContext& ctx, const std::string& expected,
                         const std::function<std::string()>& create) {
  auto client = store::Client::connect(ctx.store_url);
  client->add(ctx.job_id + "/ready", 1);
  while (client->get(ctx.job_id + "/ready", milliseconds(0)).value_or("0") != "2") {
    std::this_thread::sleep_for(milliseconds(5));
  }
  const auto start = Clock::now();
  if (ctx.rank == 1) std::this_thread::sleep_for(kLaterArrival);
  const std::string message = create();
  const auto took = Clock::now() - start;
  EXPECT_NE(message, "") << "rank " << ctx.rank << " created an object its peer never joined";
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_LT(took, kToldBy) << "rank " << ctx.rank << " was told after "
                           << std::chrono::duration_cast<milliseconds>(took).count()
                           << " ms: " << message;
}

testing::MultiProcessOptions two_ranks() {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = std::chrono::seconds(60);
  options.env["MEMLOOM_EMU_DEVICE_MEM"] = "256M";
  return options;
}

std::string both_values(int rank, const std::string& what, const std::string& mine,
                        const std::string& theirs) {
  return "rank " + std::to_string(rank) + " says " + what + " " + mine + ", rank " +
         std::to_string(1 - rank) + " says " + theirs;
}

TEST(MismatchedIds, SmemShmCreateWithDifferentIdsNamesBoth) {
  auto results = testing::run_ranks(two_ranks(), [](const testing::RankContext& ctx) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = 20;
    config.shmCreateTimeout = deadline_seconds(ctx.rank);
    ASSERT_EQ(smem_shm_init(ctx.store_url.c_str(), 2, ctx.rank, 0, &config), SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const uint32_t id = 1 + ctx.rank;
    expect_told_in_time(
        ctx, both_values(ctx.rank, "id", std::to_string(id), std::to_string(2 - ctx.rank)), [&] {
          void* gva = nullptr;
          smem_shm_t shm = smem_shm_create(id, 2, ctx.rank, kSlot, SMEMS_DATA_OP_MTE, 0, &gva);
          if (shm != nullptr) {
            smem_shm_destroy(shm, 0);
            return std::string();
          }
          return std::string(smem_get_last_err_msg());
        });
    smem_shm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(MismatchedIds, SmemBmCreateWithDifferentIdsNamesBoth) {
  auto results = testing::run_ranks(two_ranks(), [](const testing::RankContext& ctx) {
    smem_bm_config_t config;
    smem_bm_config_init(&config);
    config.startConfigStoreServer = false;
    config.initTimeout = 20;
    config.createTimeout = deadline_seconds(ctx.rank);
    config.rankId = static_cast<uint16_t>(ctx.rank);
    config.autoRanking = false;
    ASSERT_EQ(smem_bm_init(ctx.store_url.c_str(), 2, 0, &config), SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const uint32_t id = 1 + ctx.rank;
    expect_told_in_time(
        ctx, both_values(ctx.rank, "id", std::to_string(id), std::to_string(2 - ctx.rank)), [&] {
          smem_bm_t bm = smem_bm_create(id, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
          if (bm != nullptr) {
            smem_bm_destroy(bm);
            return std::string();
          }
          return std::string(smem_get_last_err_msg());
        });
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Both ranks belong to one launcher job (MEMLOOM_JOB_ID, MEMLOOM_WORLD_SIZE=2) and each creates
// its own unique id for the same store. `rank_one_start_delay_ms`: how late rank 1's backend
// starts (the emulated backend's MEMLOOM_EMU_START_DELAY_MS; others ignore it).
void expect_communicators_name_both(int rank_one_start_delay_ms) {
  auto results = testing::run_ranks(two_ranks(), [&](const testing::RankContext& ctx) {
    ::setenv("MEMLOOM_TIMEOUT_S", std::to_string(deadline_seconds(ctx.rank)).c_str(), 1);
    if (ctx.rank == 1) {
      ::setenv("MEMLOOM_EMU_START_DELAY_MS", std::to_string(rank_one_start_delay_ms).c_str(), 1);
    }
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id{};
    ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
    const std::string mine = wholememory::decode_unique_id(id).token_hex();
    auto client = store::Client::connect(ctx.store_url);
    client->set(ctx.job_id + "/token" + std::to_string(ctx.rank), mine);
    const auto theirs =
        client->get(ctx.job_id + "/token" + std::to_string(1 - ctx.rank), std::chrono::seconds(20));
    ASSERT_TRUE(theirs.has_value());
    expect_told_in_time(ctx, both_values(ctx.rank, "unique id", mine, *theirs), [&] {
      wholememory_comm_t comm = nullptr;
      if (wholememory_create_communicator(&comm, id, ctx.rank, 2) == WHOLEMEMORY_SUCCESS) {
        return std::string();
      }
      return log::last_error();
    });
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(MismatchedIds, WholeMemoryCommunicatorsWithDifferentUniqueIdsNameBoth) {
  expect_communicators_name_both(0);
}

// Rank 1's backend takes 2.5 s to start, as a CUDA context did among a dozen GPU processes. Had it
// started before rank 1 wrote its meeting record, the record would come 3.5 s after rank 0's
// start, past rank 0's 3 s deadline, and both ranks would only time out.
TEST(MismatchedIds, WholeMemoryCommunicatorsNameBothWhenABackendStartsSlowly) {
  expect_communicators_name_both(2500);
}

}  // namespace
}  // namespace memloom::bad_input
