// Single-client semantics of every store operation, including the limits and get timeouts.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "tests/store/store_test_support.h"
#include "tests/support/status_of.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

using ::memloom::testing::status_of;

TEST_P(StoreOperations, SetThenGetReturnsTheValueIncludingBinaryBytes) {
  auto client = connect();
  std::string binary("a\0b\xff", 4);
  client->set("k", binary);
  EXPECT_EQ(client->get("k", 0ms), binary);
  client->set("k", "second");
  EXPECT_EQ(client->get("k", 0ms), "second");
  client->set("empty", "");
  EXPECT_EQ(client->get("empty", 0ms), "");  // exists, empty: not nullopt
}

TEST_P(StoreOperations, GetOfAMissingKeyWithZeroTimeoutLooksOnce) {
  auto client = connect();
  auto start = Clock::now();
  EXPECT_EQ(client->get("missing", 0ms), std::nullopt);
  EXPECT_LT(Clock::now() - start, 200ms);
}

TEST_P(StoreOperations, GetTimeoutWaitsAboutAsLongAsAsked) {
  auto client = connect();
  auto start = Clock::now();
  EXPECT_EQ(client->get("missing", 300ms), std::nullopt);
  auto waited = Clock::now() - start;
  EXPECT_GE(waited, 290ms);
  EXPECT_LT(waited, 800ms);
}

TEST_P(StoreOperations, NegativeGetTimeoutIsInvalidInput) {
  auto client = connect();
  EXPECT_EQ(status_of([&] { client->get("k", -1ms); }), Status::kInvalidInput);
}

TEST_P(StoreOperations, AddCountsFromZeroAndRejectsNonIntegers) {
  auto client = connect();
  EXPECT_EQ(client->add("counter", 5), 5);
  EXPECT_EQ(client->add("counter", -7), -2);
  EXPECT_EQ(client->get("counter", 0ms), "-2");
  client->set("text", "12abc");
  EXPECT_EQ(status_of([&] { client->add("text", 1); }), Status::kInvalidValue);
  client->set("big", std::to_string(INT64_MAX));
  EXPECT_EQ(status_of([&] { client->add("big", 1); }), Status::kInvalidValue);
  EXPECT_EQ(client->get("big", 0ms), std::to_string(INT64_MAX));  // unchanged by the refusal
  EXPECT_TRUE(client->connected());  // a refusal does not cost the connection
}

TEST_P(StoreOperations, CompareAndSwapMatchesValueOrMissingKey) {
  auto client = connect();
  std::string current;
  EXPECT_FALSE(client->compare_and_swap("cas", "x", "y", false, &current));
  EXPECT_EQ(current, "");
  EXPECT_EQ(client->get("cas", 0ms), std::nullopt);

  EXPECT_TRUE(client->compare_and_swap("cas", "", "first", true, &current));
  EXPECT_EQ(current, "first");
  EXPECT_FALSE(client->compare_and_swap("cas", "", "again", true, &current));
  EXPECT_EQ(current, "first");

  EXPECT_FALSE(client->compare_and_swap("cas", "wrong", "second", false, &current));
  EXPECT_EQ(current, "first");
  EXPECT_TRUE(client->compare_and_swap("cas", "first", "second", false, nullptr));
  EXPECT_EQ(client->get("cas", 0ms), "second");
}

TEST_P(StoreOperations, AppendCreatesAndExtends) {
  auto client = connect();
  EXPECT_EQ(client->append("log", "ab"), 2u);
  EXPECT_EQ(client->append("log", "cde"), 5u);
  EXPECT_EQ(client->get("log", 0ms), "abcde");
}

TEST_P(StoreOperations, RemoveReportsWhetherTheKeyExisted) {
  auto client = connect();
  client->set("gone", "v");
  EXPECT_TRUE(client->remove("gone"));
  EXPECT_FALSE(client->remove("gone"));
  EXPECT_EQ(client->get("gone", 0ms), std::nullopt);
}

TEST_P(StoreOperations, RemovePrefixRemovesExactlyThePrefixedKeys) {
  auto client = connect();
  KeyPrefix job("job7/");
  for (int i = 0; i < 10; ++i) client->set(job("rank/" + std::to_string(i)), "x");
  client->set(job.sub("meta")("size"), "10");
  client->set("job70/rank/0", "other job");
  client->set("job7", "no slash");
  EXPECT_EQ(client->remove_prefix(job("rank/")), 10u);
  EXPECT_EQ(client->get(job("rank/3"), 0ms), std::nullopt);
  EXPECT_EQ(client->get("job7/meta/size", 0ms), "10");
  EXPECT_EQ(client->remove_prefix(job.prefix()), 1u);
  EXPECT_EQ(client->get("job70/rank/0", 0ms), "other job");
  EXPECT_EQ(client->get("job7", 0ms), "no slash");
  EXPECT_EQ(client->remove_prefix("nothing/"), 0u);
}

TEST_P(StoreOperations, LargeValuesRoundTrip) {
  // Liveness is not what this test is about: the default heartbeat time-out (3 s) leaves room for
  // moving 8 MiB each way on a slow (ThreadSanitizer) build, where 1 s once did not.
  ClientOptions options = quick_client_options();
  options.heartbeat_interval = ClientOptions{}.heartbeat_interval;
  options.heartbeat_timeout = ClientOptions{}.heartbeat_timeout;
  auto client = connect(options);
  std::string big(8 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  client->set("big", big);
  EXPECT_EQ(client->get("big", 0ms), big);
}

}  // namespace
}  // namespace memloom::store::testing
