// A rank whose backend cannot start (here a bad emulated setting; on a cluster, a node whose GPU
// is missing) fails wholememory_create_communicator at once with the backend's error. The backend
// starts only once the ranks met (so that a slow start delays no rank's arrival), so its peers have
// already gone on to the communicator's collectives: they are told by their deadline, naming the
// rank they wait for, and none hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "src/base/log.h"
#include "src/store/client.h"
#include "tests/support/multi_process.h"
#include "wholememory/wholememory.h"

namespace memloom::bad_input {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDeadlineSeconds = 3;

TEST(BackendStartFailure, TheFailingRankNamesTheCauseAndItsPeersAreToldInTime) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = std::chrono::seconds(60);
  options.env["MEMLOOM_BACKEND"] = "emulated";
  options.env["MEMLOOM_EMU_DEVICE_MEM"] = "256M";
  options.env["MEMLOOM_TIMEOUT_S"] = std::to_string(kDeadlineSeconds);
  auto results = testing::run_ranks(options, [](const testing::RankContext& ctx) {
    if (ctx.rank == 1) ::setenv("MEMLOOM_EMU_DEVICES", "0", 1);  // out of range: no start
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    auto client = store::Client::connect(ctx.store_url);
    wholememory_unique_id_t id{};
    if (ctx.rank == 0) {
      ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
      client->set(ctx.job_id + "/id", std::string(id.internal, sizeof(id.internal)));
    } else {
      const auto shared = client->get(ctx.job_id + "/id", std::chrono::seconds(20));
      ASSERT_TRUE(shared.has_value());
      shared->copy(id.internal, sizeof(id.internal));
    }
    const auto start = Clock::now();
    wholememory_comm_t comm = nullptr;
    const auto code = wholememory_create_communicator(&comm, id, ctx.rank, 2);
    const auto took = Clock::now() - start;
    const std::string message = log::last_error();
    if (ctx.rank == 1) {
      EXPECT_EQ(code, WHOLEMEMORY_INVALID_VALUE) << message;
      EXPECT_NE(message.find("MEMLOOM_EMU_DEVICES"), std::string::npos) << message;
      EXPECT_LT(took, std::chrono::seconds(1)) << message;
      // Alive past rank 0's deadline: rank 0 must not learn of the failure from a dead process.
      std::this_thread::sleep_for(std::chrono::seconds(kDeadlineSeconds + 1));
    } else {
      EXPECT_EQ(code, WHOLEMEMORY_COMMUNICATION_ERROR) << message;
      EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
      EXPECT_LT(took, std::chrono::seconds(kDeadlineSeconds + 1)) << message;
    }
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::bad_input
