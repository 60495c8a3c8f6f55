// The fault cases that involve the config store, with the store on a real single-member etcd
// (tests/etcd/etcd_cluster.h) instead of the TCP store: a rank SIGKILLed in a call that goes
// through the store or a group built on it (the kill matrix's harness, tests/faults), etcd itself
// killed while ranks wait on it, and (tests/faults/missing_rank_test.cpp, compiled in here too) a
// rank that never arrives. Each test gets its own etcd, so keys of one test never meet another's
// even when the binary runs every test in one process.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/base/log.h"
#include "src/core/group.h"
#include "src/store/client.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/faults/scenarios.h"
#include "wholememory/wholememory.h"

namespace memloom::faults {
namespace {

std::unique_ptr<store::testing::EtcdCluster>& current_cluster() {
  static std::unique_ptr<store::testing::EtcdCluster> cluster;
  return cluster;
}

// A fresh etcd around every test, started before the test's JobAudit so that it counts as a child
// that was there before the job (gtest listeners run in the test process, never in a rank).
class EtcdPerTest : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    try {
      current_cluster() = std::make_unique<store::testing::EtcdCluster>(1);
      set_job_store_url(current_cluster()->url());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "etcd_fault_tests: %s\n", error.what());
      // Nothing listens there: every job fails instead of quietly using a TCP store.
      set_job_store_url("etcd://127.0.0.1:1");
    }
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    current_cluster().reset();
    set_job_store_url("");
  }
};

const bool kListenerInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new EtcdPerTest);
  return true;
}();

// The kill matrix's cases whose blocking call, or the failure detection behind it, goes through
// the store: its own operations and rank-down events, group creation and the groups' barriers,
// SHM/BM create (an exchange through the store) and WholeMemory's communicator calls. The data
// paths (copies, transfers) do not touch the store and stay in tests/faults only.
const char* const kStoreScenarios[] = {"StoreOps", "GroupBarrier", "ShmCreate", "ShmBarrier",
                                       "BmCreate", "BmJoin",       "WmBarrier", "WmMallocFree"};

struct EtcdKillCase {
  ScenarioEntry scenario;
  KillPoint when;
};

std::vector<EtcdKillCase> etcd_kill_cases() {
  std::vector<EtcdKillCase> cases;
  for (const ScenarioEntry& scenario : kill_scenarios()) {
    bool wanted = false;
    for (const char* name : kStoreScenarios) wanted = wanted || scenario.name == name;
    if (!wanted || !scenario.one_node) continue;
    for (KillPoint when : {KillPoint::kBeforeCall, KillPoint::kDuringCalls}) {
      cases.push_back({scenario, when});
    }
  }
  return cases;
}

void PrintTo(const EtcdKillCase& kill_case, std::ostream* out) {
  *out << kill_case.scenario.name;
}

class EtcdKillMatrix : public ::testing::TestWithParam<EtcdKillCase> {};

TEST_P(EtcdKillMatrix, SurvivorsFailWithinTheDeadlineAndShutDownCleanly) {
  run_kill_case(GetParam().scenario.factory, Topology{3, 1, 1}, GetParam().when);
}

INSTANTIATE_TEST_SUITE_P(StoreCalls, EtcdKillMatrix, ::testing::ValuesIn(etcd_kill_cases()),
                         [](const ::testing::TestParamInfo<EtcdKillCase>& info) {
                           return info.param.scenario.name +
                                  (info.param.when == KillPoint::kBeforeCall ? "_KilledBefore"
                                                                             : "_KilledDuring");
                         });

TEST(EtcdKillMatrix, CoversEveryStoreScenario) {
  // A scenario renamed in tests/faults must not silently drop out of the etcd runs.
  EXPECT_EQ(etcd_kill_cases().size(), 2 * std::size(kStoreScenarios));
}

// etcd itself SIGKILLed while every rank waits on it. Unlike the TCP store, whose death closes
// the connection at once, an etcd client may retry until its deadline: the call must fail by then
// (never hang), with a message, and the rank must still shut down cleanly.
constexpr uint32_t kWaitSeconds = 6;
constexpr auto kKillAfter = std::chrono::milliseconds(300);

void run_with_killable_etcd(const std::function<void(const testing::RankContext&)>& body) {
  JobAudit job;
  testing::MultiProcessOptions options;
  options.ranks = 3;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.store_url = job_store_url();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    RankAudit audit;
    body(rank);
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

// Every rank makes `call`, which blocks on the store; rank 0 kills etcd meanwhile (the member is
// the test process's child, but any process of the job may signal its group).
void expect_failure_within_deadline(const testing::RankContext& rank,
                                    const std::function<CallResult()>& call) {
  const std::string barrier = rank.job_id + "/before-call";
  store_barrier(rank.store_url, barrier, rank.world_size);
  if (rank.rank == 0) {
    await_all_left_barrier(rank.store_url, barrier, rank.world_size);
    std::thread([] {
      std::this_thread::sleep_for(kKillAfter);
      current_cluster()->kill(0);
    }).detach();
  }
  const auto start = Clock::now();
  CallResult result = call();
  const auto took = Clock::now() - start;
  EXPECT_TRUE(result.failed()) << "the call succeeded without the store";
  EXPECT_FALSE(result.message.empty());
  EXPECT_LT(took, std::chrono::seconds(kWaitSeconds) + kSlack)
      << "failed after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms (its deadline: " << kWaitSeconds << " s); message: " << result.message;
  if (rank.rank == 0) {
    std::printf(
        "[etcd killed] failed after %lld ms: %s\n",
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
        result.message.c_str());
  }
}

TEST(EtcdDeath, BlockedGetFailsAndLaterOpsFailWithinTheirDeadline) {
  run_with_killable_etcd([](const testing::RankContext& rank) {
    store::ClientOptions options;
    options.connect_timeout = std::chrono::seconds(kCallTimeoutSeconds);
    auto client = store::Client::connect(rank.store_url, options);
    expect_failure_within_deadline(rank, [&] {
      return core_call(
          [&] { client->get(rank.job_id + "/never-set", std::chrono::seconds(kWaitSeconds)); });
    });
    const auto start = Clock::now();
    CallResult later = core_call([&] { client->add("counter", 1); });
    EXPECT_TRUE(later.failed()) << "an add succeeded with etcd dead";
    EXPECT_TRUE(is_core_peer_failure(later.code)) << later.code << ": " << later.message;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(kCallTimeoutSeconds) + kSlack)
        << later.message;
  });
}

TEST(EtcdDeath, GroupWaitingForAMissingRankFailsWithinItsDeadline) {
  run_with_killable_etcd([](const testing::RankContext& rank) {
    std::shared_ptr<store::Client> client = store::Client::connect(rank.store_url);
    expect_failure_within_deadline(rank, [&] {
      return core_call([&] {
        core::Group::create(client, store::KeyPrefix(rank.job_id + "/group/"), rank.rank,
                            rank.world_size + 1,
                            Deadline::after(std::chrono::seconds(kWaitSeconds)));
      });
    });
  });
}

TEST(EtcdDeath, WholeMemoryCommunicatorWaitingForAMissingRankFailsWithinItsDeadline) {
  run_with_killable_etcd([](const testing::RankContext& rank) {
    ::setenv("MEMLOOM_TIMEOUT_S", std::to_string(kWaitSeconds).c_str(), 1);
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id{};
    if (rank.rank == 0) {
      ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
      publish(rank.store_url, rank.job_id + "/id", std::string(id.internal, sizeof(id.internal)));
    } else {
      std::memcpy(id.internal, await(rank.store_url, rank.job_id + "/id").data(), sizeof(id));
    }
    expect_failure_within_deadline(rank, [&] {
      wholememory_comm_t comm = nullptr;
      auto code = wholememory_create_communicator(&comm, id, rank.rank, rank.world_size + 1);
      return code == WHOLEMEMORY_SUCCESS ? CallResult{}
                                         : CallResult{static_cast<int>(code), log::last_error()};
    });
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
  });
}

}  // namespace
}  // namespace memloom::faults
