// What only the etcd store has: job prefixes in a shared cluster, leases (a SIGKILLed rank is
// reported down within its lease time), unreachable clusters, and a 3-member cluster losing one
// member (nothing changes) or its quorum (errors within the deadline, then recovery).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "memloom/error.h"
#include "src/store/etcd_client.h"
#include "src/store/etcd_http.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/store/store_test_support.h"
#include "tests/support/multi_process.h"
#include "tests/support/status_of.h"

namespace memloom::store::testing {
namespace {

using ::memloom::testing::status_of;
using Clock = std::chrono::steady_clock;

ClientOptions in_job(const std::string& job, ClientOptions options = quick_client_options()) {
  options.job_namespace = job;
  return options;
}

int64_t elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

TEST(EtcdStore, JobsSharingAClusterDoNotSeeEachOthersKeys) {
  EtcdCluster etcd;
  auto first = Client::connect(etcd.url(), in_job("job-a"));
  auto second = Client::connect(etcd.url(), in_job("job-b"));
  first->set("k", "a");
  second->set("k", "b");
  EXPECT_EQ(first->get("k", 0ms), "a");
  EXPECT_EQ(second->get("k", 0ms), "b");
  EXPECT_EQ(second->remove_prefix(""), 1u);
  EXPECT_EQ(first->get("k", 0ms), "a");
  // MEMLOOM_STORE_PREFIX overrides the job namespace.
  ::setenv("MEMLOOM_STORE_PREFIX", "job-a-explicit", 1);
  auto explicit_prefix = Client::connect(etcd.url(), in_job("job-a"));
  ::unsetenv("MEMLOOM_STORE_PREFIX");
  EXPECT_EQ(explicit_prefix->get("k", 0ms), std::nullopt);
  EXPECT_EQ(etcd_job_root(in_job("x")), "memloom/job/x/");
}

TEST(EtcdStore, KeysHangOnTheJobLeaseSoACrashedJobsKeysExpire) {
  EtcdCluster etcd;
  auto client = Client::connect(etcd.url(), in_job("leased"));
  client->set("k", "v");
  etcd::EtcdHttp http(parse_etcd_url(etcd.url()).endpoints);
  auto reply =
      http.call("/v3/kv/range", etcd::JsonObject().bytes("key", "memloom/job/leased/k/k").finish(),
                Deadline::after(5000ms), "test range");
  const etcd::JsonValue& kv = reply.find("kvs")->items.at(0);
  int64_t lease = etcd::json_int(kv.find("lease")).value_or(0);
  ASSERT_NE(lease, 0);
  auto ttl = http.call("/v3/kv/lease/timetolive", etcd::JsonObject().integer("ID", lease).finish(),
                       Deadline::after(5000ms), "test lease");
  EXPECT_EQ(etcd::json_int(ttl.find("grantedTTL")), kEtcdJobLeaseTtl.count());
  // A second client of the job adopts the same lease instead of granting its own.
  auto other = Client::connect(etcd.url(), in_job("leased"));
  other->set("k2", "v");
  auto second =
      http.call("/v3/kv/range", etcd::JsonObject().bytes("key", "memloom/job/leased/k/k2").finish(),
                Deadline::after(5000ms), "test range");
  EXPECT_EQ(etcd::json_int(second.find("kvs")->items.at(0).find("lease")), lease);
}

TEST(EtcdStore, OverSizeValuesAreInvalidInputAndTheClientStaysUsable) {
  EtcdCluster etcd;
  auto client = Client::connect(etcd.url(), in_job("big"));
  EXPECT_EQ(status_of([&] { client->set("k", std::string(40 << 20, 'v')); }),
            Status::kInvalidInput);
  client->set("k", "small");
  EXPECT_EQ(client->get("k", 0ms), "small");
}

TEST(EtcdStore, UnreachableClusterFailsWithinTheDeadlineNamingEveryEndpoint) {
  // Ports nobody listens on (a cluster that was just stopped).
  std::string url;
  {
    EtcdCluster gone(1);
    url = gone.url() + "," + gone.url().substr(7);
  }
  ClientOptions options = quick_client_options();
  options.connect_timeout = 1500ms;
  auto start = Clock::now();
  try {
    Client::connect(url, options);
    ADD_FAILURE() << "connected to nothing";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kCommunication);
    std::string endpoint = url.substr(7, url.find(',') - 7);
    EXPECT_NE(std::string(error.what()).find(endpoint), std::string::npos) << error.what();
  }
  EXPECT_LT(elapsed_ms(start), 4000);
  EXPECT_EQ(status_of([&] { check_etcd_reachable(url, 1000ms); }), Status::kCommunication);
}

TEST(EtcdStore, StoppedClusterGivesErrorsWithinTheDeadlineNotHangs) {
  EtcdCluster etcd;
  ClientOptions options = quick_client_options();
  options.connect_timeout = 1500ms;
  auto client = Client::connect(etcd.url(), in_job("frozen", options));
  etcd.signal(0, SIGSTOP);
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] { client->set("k", "v"); }), Status::kCommunication);
  EXPECT_LT(elapsed_ms(start), 3000);
  EXPECT_EQ(status_of([&] { client->add("n", 1); }), Status::kCommunication);
  etcd.signal(0, SIGCONT);
  // A write that timed out may still be applied once the member resumes (its request sat in the
  // member's socket), as with any store a client gave up on; the client works again at once.
  client->set("k2", "after");
  EXPECT_EQ(client->get("k2", 0ms), "after");
}

// Rank 1 registers with a 1 s heartbeat timeout (etcd: a lease of 1 s, the least these test
// servers allow) and is SIGKILLed; rank 0 must see it go down once etcd expires the lease: after
// the TTL, and within TTL + etcd's expiry sweep (500 ms) + slack.
TEST(EtcdRankDown, SigkilledRankIsReportedWithinItsLeaseTime) {
  EtcdCluster etcd;
  const std::string url = etcd.url();
  memloom::testing::MultiProcessOptions options;
  options.ranks = 2;
  options.start_store = false;
  options.timeout = 30000ms;
  auto results =
      memloom::testing::run_ranks(options, [&](const memloom::testing::RankContext& rank) {
        ClientOptions client_options = in_job(rank.job_id);
        client_options.rank = rank.rank;
        client_options.group = "g";
        client_options.heartbeat_interval = 100ms;
        client_options.heartbeat_timeout = rank.rank == 1 ? 1000ms : 5000ms;
        EventLog log;
        auto client = Client::connect(url, client_options);
        if (rank.rank == 1) {
          client->set("pid", std::to_string(::getpid()));
          std::this_thread::sleep_for(30000ms);
          return;
        }
        client->watch_rank_down("g", log.callback());
        auto pid = client->get("pid", 10000ms);
        ASSERT_TRUE(pid.has_value());
        auto start = Clock::now();
        ::kill(static_cast<pid_t>(std::stol(*pid)), SIGKILL);
        auto events = log.wait_for(1, 10000ms);
        auto waited = elapsed_ms(start);
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].kind, WatchEventKind::kRankDown);
        EXPECT_EQ(events[0].rank, 1);
        EXPECT_EQ(events[0].group, "g");
        EXPECT_GE(waited, 500);
        EXPECT_LT(waited, 3000);
        std::printf("etcd rank-down after SIGKILL: %lld ms (lease TTL 1 s)\n",
                    static_cast<long long>(waited));
      });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].exit_code, 0) << memloom::testing::describe(results);
  EXPECT_EQ(results[1].signal, SIGKILL) << memloom::testing::describe(results);
}

class EtcdFailover : public ::testing::Test {
 protected:
  EtcdCluster etcd_{3};
};

TEST_F(EtcdFailover, LosingOneOfThreeMembersChangesNothing) {
  ClientOptions options = in_job("failover");
  options.connect_timeout = 10000ms;
  EventLog changes, down;
  auto watcher = Client::connect(etcd_.url(), options);
  auto writer = Client::connect(etcd_.url(), options);
  ClientOptions ranked = options;
  ranked.rank = 2;
  ranked.group = "g";
  auto member = Client::connect(etcd_.url(), ranked);
  watcher->watch_key("counter", changes.callback());
  watcher->watch_rank_down("g", down.callback());
  std::atomic<bool> stop{false};
  std::atomic<int> added{0};
  std::thread adder([&] {
    while (!stop) {
      writer->add("counter", 1);
      ++added;
    }
  });
  std::this_thread::sleep_for(300ms);
  // Member 0 is the one every client tried first.
  etcd_.kill(0);
  std::this_thread::sleep_for(1500ms);
  stop = true;
  adder.join();
  ASSERT_GT(added.load(), 0);
  EXPECT_EQ(writer->get("counter", 0ms), std::to_string(added.load()));
  auto events = changes.wait_for(static_cast<size_t>(added.load()), 10000ms);
  EXPECT_EQ(events.size(), static_cast<size_t>(added.load())) << "every change, once";
  if (!events.empty()) {
    EXPECT_EQ(events.back().value, std::to_string(added.load()));
  }
  EXPECT_TRUE(down.events().empty()) << "the ranked client's lease lived on";
  EXPECT_TRUE(member->connected());
  // A get that waits is woken through a surviving member.
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    writer->set("late", "v");
  });
  EXPECT_EQ(watcher->get("late", 5000ms), "v");
  later.join();
  std::printf("adds while one of three members died: %d\n", added.load());
}

TEST_F(EtcdFailover, LosingTheQuorumFailsWithinTheDeadlineAndTheJobRecovers) {
  ClientOptions options = in_job("quorum");
  options.connect_timeout = 2000ms;
  auto client = Client::connect(etcd_.url(), options);
  client->set("k", "before");
  etcd_.kill(1);
  etcd_.kill(2);
  auto start = Clock::now();
  try {
    client->set("k", "during");
    ADD_FAILURE() << "a write succeeded without a quorum";
  } catch (const Error& error) {
    EXPECT_TRUE(error.status() == Status::kTimeout || error.status() == Status::kCommunication)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:"), std::string::npos) << error.what();
    std::printf("without quorum: %s\n", error.what());
  }
  auto took = elapsed_ms(start);
  EXPECT_LT(took, 4000) << "the call's deadline is 2 s";
  EXPECT_GE(took, 1500);
  std::printf("write without quorum failed after %lld ms (deadline 2000 ms)\n",
              static_cast<long long>(took));
  etcd_.restart(1);
  etcd_.restart(2);
  etcd_.wait_ready(20000ms);
  client->set("k", "after");
  EXPECT_EQ(client->get("k", 0ms), "after");
  EXPECT_EQ(client->add("n", 2), 2);
}

}  // namespace
}  // namespace memloom::store::testing
