// The config store server is SIGKILLed. Calls blocked on it (a get, an init or a communicator
// waiting for a rank that never comes) must fail promptly (the connection closed: no need to wait
// for the deadline); calls that need it later fail at once; calls that do not need it (collectives
// of groups already built, transfers to peers already known) keep working. Every rank then shuts
// down cleanly and leaves nothing behind. The bodies are shared with the etcd runs
// (store_death_cases.h); only the bound differs.
#include <gtest/gtest.h>
#include <signal.h>

#include "src/store/client.h"
#include "tests/faults/scenarios.h"
#include "tests/faults/store_death_cases.h"

namespace memloom::faults {
namespace {

// Blocked calls get this deadline; they must fail well before it, since the store's death closes
// their connection.
constexpr uint32_t kLongTimeoutSeconds = 10;
constexpr auto kPromptly = std::chrono::seconds(5);

KillableStore tcp_store(const StoreProcess& process) {
  KillableStore store;
  store.url = process.url();
  store.pid = process.pid();
  store.kill = [pid = process.pid()] { ::kill(pid, SIGKILL); };
  store.wait_seconds = kLongTimeoutSeconds;
  store.fail_within = kPromptly;
  return store;
}

TEST(StoreDeath, BlockedGetFailsPromptlyAndLaterOpsFailAtOnce) {
  StoreProcess process;
  const KillableStore store = tcp_store(process);
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    auto client = store::Client::connect(store.url);
    expect_failure_when_store_dies(rank, store, [&] {
      return core_call([&] {
        client->get(rank.job_id + "/never-set", std::chrono::seconds(kLongTimeoutSeconds));
      });
    });
    const auto start = Clock::now();
    CallResult later = core_call([&] { client->add("counter", 1); });
    EXPECT_EQ(later.code, static_cast<int>(Status::kCommunication)) << later.message;
    // "At once": well inside the 10 s deadline it would otherwise wait out, with room for a
    // heavily loaded machine's scheduling delays.
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    EXPECT_FALSE(client->connected());
  });
}

TEST(StoreDeath, GroupWaitingForAMissingRankFailsPromptly) {
  StoreProcess process;
  group_waiting_for_a_missing_rank(tcp_store(process));
}

TEST(StoreDeath, ShmInitWaitingForAMissingRankFailsPromptly) {
  StoreProcess process;
  shm_init_waiting_for_a_missing_rank(tcp_store(process));
}

TEST(StoreDeath, BmInitWaitingForAMissingRankFailsPromptly) {
  StoreProcess process;
  bm_init_waiting_for_a_missing_rank(tcp_store(process));
}

TEST(StoreDeath, WholeMemoryCommunicatorWaitingForAMissingRankFailsPromptly) {
  StoreProcess process;
  wholememory_communicator_waiting_for_a_missing_rank(tcp_store(process));
}

TEST(StoreDeath, ShmObjectsBuiltBeforeKeepWorkingAndShutDown) {
  StoreProcess process;
  shm_objects_built_before_keep_working(tcp_store(process));
}

TEST(StoreDeath, TransKnownPeersStayReachableNewOnesFailAtOnce) {
  StoreProcess process;
  trans_known_peers_stay_reachable(tcp_store(process));
}

}  // namespace
}  // namespace memloom::faults
