// The TCP store's own limits (the server's key, value and frame sizes) and key prefixes; the
// operations every store shares are in store_operations_test.cpp.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "tests/store/store_test_support.h"
#include "tests/support/status_of.h"

namespace memloom::store::testing {
namespace {

using ::memloom::testing::status_of;

TEST(KeyPrefixTest, ComposesPrefixes) {
  KeyPrefix wm("wm/comm42/");
  EXPECT_EQ(wm("rank/3"), "wm/comm42/rank/3");
  EXPECT_EQ(wm.sub("tensor1")("size"), "wm/comm42/tensor1/size");
  EXPECT_EQ(wm.sub("tensor1").prefix(), "wm/comm42/tensor1/");
}

TEST_F(StoreTest, OversizedKeysAndValuesAreRefusedWithoutDroppingTheConnection) {
  ServerOptions options;
  options.max_key_bytes = 16;
  options.max_value_bytes = 100;
  options.max_frame_bytes = 4096;
  start_server(options);
  auto client = connect();
  EXPECT_EQ(status_of([&] { client->set(std::string(17, 'k'), "v"); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { client->set("k", std::string(101, 'v')); }), Status::kInvalidInput);
  // Larger than the frame limit: refused by the client before it reaches the server.
  EXPECT_EQ(status_of([&] { client->set("k", std::string(5000, 'v')); }), Status::kInvalidInput);
  client->set("k", std::string(60, 'v'));
  EXPECT_EQ(status_of([&] { client->append("k", std::string(41, 'v')); }), Status::kInvalidInput);
  EXPECT_EQ(client->append("k", std::string(40, 'v')), 100u);
  EXPECT_TRUE(client->connected());
  EXPECT_EQ(client->get("k", 0ms)->size(), 100u);
}

TEST_F(StoreTest, ValuesGrownByAppendPastTheFrameLimitCanStillBeReadAndWatched) {
  ServerOptions options;
  options.max_frame_bytes = 4096;
  options.max_value_bytes = 64 * 1024;
  start_server(options);
  EventLog log;
  auto client = connect();
  auto watcher = connect();
  watcher->watch_key("grown", log.callback());
  std::string chunk(3000, 'g');
  for (int i = 0; i < 20; ++i) client->append("grown", chunk);
  EXPECT_EQ(client->get("grown", 0ms)->size(), 60000u);
  auto events = log.wait_for(20, 3000ms);
  ASSERT_EQ(events.size(), 20u);
  EXPECT_EQ(events.back().value.size(), 60000u);
  EXPECT_TRUE(client->connected());
  EXPECT_TRUE(watcher->connected());
}

}  // namespace
}  // namespace memloom::store::testing
