// Rank-down notification of the TCP store for ranks that are SIGKILLed or frozen (tests/etcd has
// etcd's, whose bound is its lease time).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "tests/store/store_test_support.h"
#include "tests/support/multi_process.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The rank processes are forked by the shared multi-process support (store in its own child).
// Rank 1 joins group `job_id` with a 500 ms heartbeat timeout and waits; rank 0 watches the
// group (with a 5 s timeout of its own), then stops rank 1 with `signal` and times the rank-down
// event.
void expect_rank_down_after(int signal_number, std::chrono::milliseconds at_least,
                            std::chrono::milliseconds limit) {
  memloom::testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = 20000ms;
  auto results =
      memloom::testing::run_ranks(options, [&](const memloom::testing::RankContext& rank) {
        KeyPrefix keys = KeyPrefix(rank.job_id + "/");
        ClientOptions client_options = quick_client_options();
        client_options.rank = rank.rank;
        client_options.group = rank.job_id;
        client_options.heartbeat_interval = 100ms;
        // Only rank 1's timeout is under test. The watcher's own link gets a slack one: under
        // ThreadSanitizer on a loaded 2-core machine the server once went 686 ms without a word
        // and a 500 ms watcher dropped its connection before the event came.
        client_options.heartbeat_timeout = rank.rank == 1 ? 500ms : 5000ms;
        EventLog log;
        auto client = Client::connect(rank.store_url, client_options);
        if (rank.rank == 1) {
          client->set(keys("pid"), std::to_string(::getpid()));
          std::this_thread::sleep_for(20000ms);  // until rank 0 stops us
          return;
        }
        client->watch_rank_down(rank.job_id, log.callback());
        auto pid = client->get(keys("pid"), 10000ms);
        ASSERT_TRUE(pid.has_value());
        auto start = Clock::now();
        ::kill(static_cast<pid_t>(std::stol(*pid)), signal_number);
        auto events = log.wait_for(1, 5000ms);
        auto waited = Clock::now() - start;
        ::kill(static_cast<pid_t>(std::stol(*pid)), SIGKILL);  // a stopped rank must still end
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].kind, WatchEventKind::kRankDown);
        EXPECT_EQ(events[0].rank, 1);
        EXPECT_EQ(events[0].group, rank.job_id);
        EXPECT_GE(waited, at_least);
        EXPECT_LT(waited, limit);
      });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].exit_code, 0) << memloom::testing::describe(results);
  EXPECT_EQ(results[1].signal, SIGKILL) << memloom::testing::describe(results);
}

TEST(StoreRankDown, SigkilledClientProcessIsReportedAtOnce) {
  // The kernel closes the dead process's socket, so the server need not wait for heartbeats.
  expect_rank_down_after(SIGKILL, 0ms, 500ms);
}

TEST(StoreRankDown, FrozenClientProcessIsReportedWithinItsHeartbeatTimeout) {
  // SIGSTOP keeps the socket open: only the missing heartbeats reveal the rank is gone.
  // Its last heartbeat was at most 100 ms before the stop, so the server waits >= 400 ms.
  expect_rank_down_after(SIGSTOP, 350ms, 1500ms);
}

}  // namespace
}  // namespace memloom::store::testing
