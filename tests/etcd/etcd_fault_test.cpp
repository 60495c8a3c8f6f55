// The fault cases that involve the config store, with the store on a real single-member etcd
// (tests/etcd/etcd_cluster.h) instead of the TCP store: a rank SIGKILLed in a call that goes
// through the store or a group built on it (the kill matrix's harness, tests/faults; on one node,
// and for the calls whose groups span nodes also with the victim on a second node), etcd itself
// killed while ranks wait on it or after they built objects on it (the TCP store's store-death
// cases, tests/faults/store_death_cases.h), and (tests/faults/missing_rank_test.cpp, compiled in
// here too) a rank that never arrives. Each test gets its own etcd, so keys of one test never meet
// another's even when the binary runs every test in one process.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/store/client.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/faults/scenarios.h"
#include "tests/faults/store_death_cases.h"

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

// Of those, the ones whose group spans two nodes when the victim leads the second one, run that
// way too (the kill matrix's TwoNodes topology): the survivors learn of the death across nodes
// from the victim's etcd lease while they wait in a cross-node collective (the group's barrier,
// WholeMemory's barrier) or in a create that opens the network transport between nodes (BM).
// The other two-node cells add no etcd path of their own, so CI time stays on these.
const char* const kCrossNodeScenarios[] = {"GroupBarrier", "BmCreate", "WmBarrier"};

struct EtcdKillCase {
  ScenarioEntry scenario;
  bool two_nodes = false;
  KillPoint when;
};

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& name) {
  for (const char* listed_name : names) {
    if (name == listed_name) return true;
  }
  return false;
}

std::vector<EtcdKillCase> etcd_kill_cases() {
  std::vector<EtcdKillCase> cases;
  for (const ScenarioEntry& scenario : kill_scenarios()) {
    if (!listed(kStoreScenarios, scenario.name)) continue;
    for (KillPoint when : {KillPoint::kBeforeCall, KillPoint::kDuringCalls}) {
      if (scenario.one_node) cases.push_back({scenario, false, when});
      if (scenario.two_nodes && listed(kCrossNodeScenarios, scenario.name)) {
        cases.push_back({scenario, true, when});
      }
    }
  }
  return cases;
}

void PrintTo(const EtcdKillCase& kill_case, std::ostream* out) {
  *out << kill_case.scenario.name << (kill_case.two_nodes ? "/TwoNodes" : "");
}

class EtcdKillMatrix : public ::testing::TestWithParam<EtcdKillCase> {};

TEST_P(EtcdKillMatrix, SurvivorsFailWithinTheDeadlineAndShutDownCleanly) {
  // As tests/faults/kill_matrix_test.cpp: three ranks on one node; four on two nodes with the
  // victim leading the second node.
  const Topology topology = GetParam().two_nodes ? Topology{4, 2, 2} : Topology{3, 1, 1};
  run_kill_case(GetParam().scenario.factory, topology, GetParam().when);
}

INSTANTIATE_TEST_SUITE_P(StoreCalls, EtcdKillMatrix, ::testing::ValuesIn(etcd_kill_cases()),
                         [](const ::testing::TestParamInfo<EtcdKillCase>& info) {
                           return info.param.scenario.name +
                                  (info.param.two_nodes ? "_TwoNodes" : "") +
                                  (info.param.when == KillPoint::kBeforeCall ? "_KilledBefore"
                                                                             : "_KilledDuring");
                         });

TEST(EtcdKillMatrix, CoversEveryStoreScenario) {
  // A scenario renamed in tests/faults, or no longer meaningful across nodes, must not silently
  // drop out of the etcd runs.
  EXPECT_EQ(etcd_kill_cases().size(),
            2 * std::size(kStoreScenarios) + 2 * std::size(kCrossNodeScenarios));
}

// etcd itself SIGKILLed, with the bodies of the TCP store's cases (tests/faults/
// store_death_cases.h). Unlike the TCP store, whose death closes the connection at once, an etcd
// client retries the members until its deadline: a call that needs the store must fail by then
// (never hang), with a message, and the rank must still shut down cleanly. Calls that do not need
// the store (collectives of groups built before, transfers to peers already known) must keep
// working, as on the TCP store. A shutdown still makes its clean-up calls to the store, each of
// which waits out its client's call time before the keys are left behind: shutdown is bounded by
// those calls' times (KillableStore::after_death), where on the TCP store it is prompt.
constexpr uint32_t kWaitSeconds = 6;

KillableStore killable_etcd() {
  KillableStore store;
  store.url = job_store_url();
  store.pid = current_cluster() ? current_cluster()->pid(0) : -1;
  // The member is the test process's child, but any process of the job may signal its group.
  store.kill = [] { current_cluster()->kill(0); };
  store.wait_seconds = kWaitSeconds;
  store.fail_within = std::chrono::seconds(kWaitSeconds) + kSlack;
  store.dead_store_fails_calls_at_once = false;
  return store;
}

TEST(EtcdDeath, BlockedGetFailsAndLaterOpsFailWithinTheirDeadline) {
  const KillableStore store = killable_etcd();
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    store::ClientOptions options;
    options.connect_timeout = std::chrono::seconds(kCallTimeoutSeconds);
    auto client = store::Client::connect(store.url, options);
    expect_failure_when_store_dies(rank, store, [&] {
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
  group_waiting_for_a_missing_rank(killable_etcd());
}

TEST(EtcdDeath, ShmInitWaitingForAMissingRankFailsWithinItsDeadline) {
  shm_init_waiting_for_a_missing_rank(killable_etcd());
}

TEST(EtcdDeath, BmInitWaitingForAMissingRankFailsWithinItsDeadline) {
  bm_init_waiting_for_a_missing_rank(killable_etcd());
}

TEST(EtcdDeath, WholeMemoryCommunicatorWaitingForAMissingRankFailsWithinItsDeadline) {
  wholememory_communicator_waiting_for_a_missing_rank(killable_etcd());
}

TEST(EtcdDeath, ShmObjectsBuiltBeforeKeepWorkingAndShutDown) {
  shm_objects_built_before_keep_working(killable_etcd());
}

TEST(EtcdDeath, TransKnownPeersStayReachableNewOnesFailWithinTheirDeadline) {
  trans_known_peers_stay_reachable(killable_etcd());
}

}  // namespace
}  // namespace memloom::faults
