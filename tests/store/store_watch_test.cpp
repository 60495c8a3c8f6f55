// Key watches and rank-down notification on every store (a rank that disconnects, an idle one).
#include <gtest/gtest.h>

#include <thread>

#include "memloom/error.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

TEST_P(StoreWatch, KeyWatchReportsEveryChangeAndRemoval) {
  EventLog log;  // declared first: it must outlive the client whose callbacks write to it
  auto watcher = connect();
  auto writer = connect();
  watcher->watch_key("w/key", log.callback());
  writer->set("w/other", "not watched");
  writer->set("w/key", "v1");
  writer->append("w/key", "+2");
  writer->add("w/key2", 1);
  writer->remove("w/key");
  writer->compare_and_swap("w/key", "", "v3", true, nullptr);
  writer->remove_prefix("w/");

  auto events = log.wait_for(5, 3000ms);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].kind, WatchEventKind::kChanged);
  EXPECT_EQ(events[0].key, "w/key");
  EXPECT_EQ(events[0].value, "v1");
  EXPECT_EQ(events[1].kind, WatchEventKind::kChanged);
  EXPECT_EQ(events[1].value, "v1+2");
  EXPECT_EQ(events[2].kind, WatchEventKind::kRemoved);
  EXPECT_EQ(events[3].kind, WatchEventKind::kChanged);
  EXPECT_EQ(events[3].value, "v3");
  EXPECT_EQ(events[4].kind, WatchEventKind::kRemoved);
  EXPECT_EQ(events[4].key, "w/key");
}

TEST_P(StoreWatch, NoEventsAfterUnwatch) {
  EventLog watched, marker;
  auto watcher = connect();
  auto writer = connect();
  WatchId id = watcher->watch_key("u/key", watched.callback());
  watcher->watch_key("u/marker", marker.callback());
  writer->set("u/key", "1");
  ASSERT_EQ(watched.wait_for(1, 3000ms).size(), 1u);
  watcher->unwatch(id);
  writer->set("u/key", "2");
  writer->set("u/marker", "done");
  // Events of one connection arrive in order, so once the marker's event is in, an event for
  // the unwatched key would have been delivered already.
  ASSERT_EQ(marker.wait_for(1, 3000ms).size(), 1u);
  EXPECT_EQ(watched.events().size(), 1u);
}

TEST_P(StoreWatch, FailedOperationsDoNotNotify) {
  EventLog watched, marker;
  auto watcher = connect();
  auto writer = connect();
  watcher->watch_key("f/key", watched.callback());
  watcher->watch_key("f/marker", marker.callback());
  writer->set("f/key", "a");
  // On etcd every watch is a stream of its own, so events of two watches arrive in no set order:
  // the key's own event is awaited before the marker is trusted.
  ASSERT_EQ(watched.wait_for(1, 3000ms).size(), 1u);
  EXPECT_FALSE(writer->compare_and_swap("f/key", "zzz", "b", false, nullptr));
  EXPECT_FALSE(writer->remove("f/missing"));
  writer->set("f/marker", "done");
  ASSERT_EQ(marker.wait_for(1, 3000ms).size(), 1u);
  EXPECT_EQ(watched.events().size(), 1u);
}

TEST_P(StoreWatch, CallbackMayUnwatchItselfAndCallTheClient) {
  std::atomic<int> calls{0};
  std::atomic<WatchId> id{0};
  EventLog done;
  auto watcher = connect();
  auto writer = connect();
  watcher->watch_key("cb/done", done.callback());
  id = watcher->watch_key("cb/key", [&](const WatchEvent& event) {
    ++calls;
    watcher->unwatch(id.load());
    watcher->set("cb/done", event.value);  // runs off the I/O thread, so it cannot deadlock
  });
  writer->set("cb/key", "first");
  auto events = done.wait_for(1, 3000ms);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value, "first");
  writer->set("cb/key", "second");
  writer->set("cb/done", "marker");
  ASSERT_EQ(done.wait_for(2, 3000ms).size(), 2u);
  EXPECT_EQ(calls.load(), 1);
}

TEST_P(StoreWatch, RankDownIsSentWhenAClientDisconnects) {
  EventLog log;
  auto watcher = connect();
  watcher->watch_rank_down("groupA", log.callback());
  ClientOptions options = quick_client_options();
  options.rank = 5;
  options.group = "groupA";
  auto other_group = quick_client_options();
  other_group.rank = 6;
  other_group.group = "groupB";
  {
    auto member = connect(options);
    auto outsider = connect(other_group);
  }
  auto events = log.wait_for(1, 3000ms);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, WatchEventKind::kRankDown);
  EXPECT_EQ(events[0].rank, 5);
  EXPECT_EQ(events[0].group, "groupA");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(log.events().size(), 1u) << "groupB's rank must not reach a groupA watcher";
}

TEST_P(StoreWatch, HeartbeatsKeepAnIdleClientAlive) {
  EventLog log;
  auto watcher = connect();
  watcher->watch_rank_down("idle", log.callback());
  ClientOptions options = quick_client_options();
  options.rank = 1;
  options.group = "idle";
  // A timeout of 20 intervals: a heartbeat thread delayed by a loaded machine's scheduler for a
  // few hundred milliseconds must not count as a dead client.
  options.heartbeat_interval = 50ms;
  options.heartbeat_timeout = 1000ms;
  auto idle = connect(options);
  std::this_thread::sleep_for(3000ms);  // several heartbeat timeouts with no request
  EXPECT_TRUE(idle->connected());
  EXPECT_TRUE(log.events().empty());
  idle->set("idle/still", "here");
}

}  // namespace
}  // namespace memloom::store::testing
