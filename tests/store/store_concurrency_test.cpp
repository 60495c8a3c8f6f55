// Many clients and many threads at once: exact totals for atomic operations, blocking gets woken
// by writes from other clients, and one client shared by many threads.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "memloom/error.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

TEST_P(StoreConcurrency, ThirtyTwoClientsDoTwoHundredOperationsEach) {
  constexpr int kThreads = 32;
  constexpr int kOps = 200;
  run_threads(kThreads, [&](int t) {
    auto client = connect();
    KeyPrefix mine = KeyPrefix("c/").sub(std::to_string(t));
    for (int i = 0; i < kOps; ++i) {
      std::string key = mine(std::to_string(i % 10));
      switch (i % 4) {
        case 0:
          client->set(key, std::to_string(i));
          break;
        case 1:
          EXPECT_EQ(client->get(mine(std::to_string((i - 1) % 10)), 0ms), std::to_string(i - 1));
          break;
        case 2:
          client->add("c/total", 1);
          break;
        case 3:
          client->append("c/log", "x");
          break;
      }
    }
  });
  auto client = connect();
  EXPECT_EQ(client->get("c/total", 0ms), std::to_string(kThreads * kOps / 4));
  EXPECT_EQ(client->get("c/log", 0ms)->size(), static_cast<size_t>(kThreads * kOps / 4));
  if (Server* server = tcp_server()) {
    EXPECT_EQ(server->connection_count(), 1u) << "every finished client closed its connection";
  }
}

TEST_P(StoreConcurrency, OneClientIsSafeToShareBetweenThreads) {
  auto client = connect();
  constexpr int kThreads = 16;
  constexpr int kOps = 200;
  std::vector<std::set<int64_t>> seen(kThreads);
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kOps; ++i) {
      seen[t].insert(client->add("shared/counter", 1));
      std::string key = "shared/" + std::to_string(t);
      client->set(key, std::to_string(i));
      EXPECT_EQ(client->get(key, 0ms), std::to_string(i));
    }
  });
  std::set<int64_t> all;
  for (const auto& values : seen) all.insert(values.begin(), values.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kOps)) << "add returned a value twice";
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kOps);
}

TEST_P(StoreConcurrency, CompareAndSwapLoopsFromManyClientsLoseNoIncrement) {
  constexpr int kThreads = 8;
  constexpr int kIncrements = 50;
  run_threads(kThreads, [&](int) {
    auto client = connect();
    for (int i = 0; i < kIncrements; ++i) {
      std::string current;
      bool missing = true;
      // Classic optimistic loop: the failed CAS hands back the value to retry from.
      while (!client->compare_and_swap(
          "cas/counter", current, std::to_string((current.empty() ? 0 : std::stoi(current)) + 1),
          missing, &current)) {
        missing = current.empty();
      }
      current.clear();
    }
  });
  EXPECT_EQ(connect()->get("cas/counter", 0ms), std::to_string(kThreads * kIncrements));
}

TEST_P(StoreConcurrency, AppendsFromManyClientsNeverInterleave) {
  constexpr int kThreads = 8;
  constexpr int kAppends = 50;
  run_threads(kThreads, [&](int t) {
    auto client = connect();
    std::string record = "<" + std::string(6, static_cast<char>('a' + t)) + ">";
    for (int i = 0; i < kAppends; ++i) client->append("append/log", record);
  });
  std::string log = *connect()->get("append/log", 0ms);
  ASSERT_EQ(log.size(), static_cast<size_t>(kThreads * kAppends * 8));
  std::vector<int> counts(kThreads, 0);
  for (size_t at = 0; at < log.size(); at += 8) {
    std::string record = log.substr(at, 8);
    ASSERT_EQ(record.front(), '<');
    ASSERT_EQ(record.back(), '>');
    ASSERT_EQ(record.find_first_not_of(record[1], 1), 7u) << "a torn record: " << record;
    counts[record[1] - 'a']++;
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(counts[t], kAppends);
}

TEST_P(StoreConcurrency, BlockingGetIsWokenBySetFromAnotherClient) {
  auto waiter = connect();
  auto writer = connect();
  std::optional<std::string> result;
  Clock::duration waited{};
  std::thread blocked([&] {
    auto start = Clock::now();
    result = waiter->get("wake/key", 10000ms);
    waited = Clock::now() - start;
  });
  std::this_thread::sleep_for(150ms);
  writer->set("wake/key", "hello");
  blocked.join();
  EXPECT_EQ(result, "hello");
  EXPECT_GE(waited, 140ms);
  EXPECT_LT(waited, 2000ms) << "the get was not woken by the set";
}

TEST_P(StoreConcurrency, EveryParkedGetOnAKeyIsWokenAndOthersTimeOut) {
  constexpr int kWaiters = 12;
  std::atomic<int> woken{0};
  std::atomic<int> timed_out{0};
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    auto client = connect();
    client->add("many/key", 7);
  });
  run_threads(kWaiters, [&](int t) {
    auto client = connect();
    // Odd threads wait on a key nobody writes, and must come back empty after their timeout.
    if (t % 2 == 1) {
      if (client->get("many/never", 400ms) == std::nullopt) ++timed_out;
    } else if (client->get("many/key", 10000ms) == "7") {
      ++woken;
    }
  });
  writer.join();
  EXPECT_EQ(woken.load(), kWaiters / 2);
  EXPECT_EQ(timed_out.load(), kWaiters / 2);
}

TEST_P(StoreConcurrency, GetTimeoutsOfConcurrentWaitersAreEachHonoured) {
  auto client = connect();
  std::vector<Clock::duration> waited(4);
  run_threads(4, [&](int t) {
    auto start = Clock::now();
    EXPECT_EQ(client->get("timeouts/missing", std::chrono::milliseconds(100 * (t + 1))),
              std::nullopt);
    waited[t] = Clock::now() - start;
  });
  for (int t = 0; t < 4; ++t) {
    auto asked = std::chrono::milliseconds(100 * (t + 1));
    EXPECT_GE(waited[t], asked - 10ms) << "waiter " << t;
    EXPECT_LT(waited[t], asked + 400ms) << "waiter " << t;
  }
}

}  // namespace
}  // namespace memloom::store::testing
