// Hostile or broken peers: every malformed frame closes the offending connection only, while a
// well-behaved client of the same server keeps working.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "src/store/protocol.h"
#include "src/store/url.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

using protocol::FrameWriter;
using protocol::MessageType;

constexpr size_t kMaxFrame = 64 * 1024;

struct BadInput {
  const char* name;
  bool send_hello_first;
  std::function<std::string()> bytes;
  bool shutdown_after = false;
};

void PrintTo(const BadInput& input, std::ostream* out) {
  *out << input.name;
}

std::string with_byte(std::string frame, size_t offset, char value) {
  frame[offset] = value;
  return frame;
}

std::string set_frame(const std::string& key, const std::string& value) {
  return FrameWriter(MessageType::kSet, 2).str(key).str(value).finish();
}

class StoreRobustness : public StoreTest, public ::testing::WithParamInterface<BadInput> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.max_frame_bytes = kMaxFrame;
    options.heartbeat_timeout = 2000ms;
    start_server(options);
    good_ = connect();
    good_->set("good/before", "1");
  }
  RawConnection raw() { return RawConnection("127.0.0.1", server_->port()); }
  void expect_good_client_unaffected() {
    EXPECT_TRUE(good_->connected());
    good_->set("good/after", "2");
    EXPECT_EQ(good_->get("good/before", 0ms), "1");
    EXPECT_EQ(good_->add("good/counter", 1), 1);
    EXPECT_TRUE(eventually([&] { return server_->connection_count() == 1; }, 2000ms))
        << server_->connection_count() << " connections open";
  }
  std::unique_ptr<Client> good_;
};

TEST_P(StoreRobustness, ClosesOnlyTheOffendingConnection) {
  const BadInput& input = GetParam();
  RawConnection connection = raw();
  if (input.send_hello_first) {
    connection.send_bytes(hello_frame(1));
    ASSERT_FALSE(connection.read_frame(2000ms).empty()) << "no hello reply";
  }
  connection.send_bytes(input.bytes());
  if (input.shutdown_after) connection.shutdown_write();
  EXPECT_TRUE(connection.closed_by_peer_within(1500ms)) << input.name;
  expect_good_client_unaffected();
}

INSTANTIATE_TEST_SUITE_P(
    Frames, StoreRobustness,
    ::testing::Values(
        BadInput{"GarbageBytes", false,
                 [] { return std::string("GET / HTTP/1.1\r\nHost: example\r\n\r\n"); }},
        BadInput{"GarbageAfterHello", true, [] { return std::string(64, '\xAB'); }},
        BadInput{"WrongVersion", false, [] { return with_byte(hello_frame(1), 4, 2); }},
        BadInput{"WrongVersionAfterHello", true,
                 [] { return with_byte(set_frame("k", "v"), 4, 9); }},
        BadInput{"NonzeroReservedField", true,
                 [] { return with_byte(set_frame("k", "v"), 20, 1); }},
        BadInput{"OversizedFrame", true,
                 [] {
                   // Only the header is sent: the server must refuse from the length alone.
                   std::string frame = set_frame("k", std::string(kMaxFrame, 'v'));
                   return frame.substr(0, protocol::kHeaderBytes);
                 }},
        BadInput{"TruncatedFrameThenEof", true,
                 [] { return set_frame("key", std::string(100, 'v')).substr(0, 40); },
                 /*shutdown_after=*/true},
        BadInput{"TruncatedHeaderThenEof", false, [] { return hello_frame(1).substr(0, 10); },
                 /*shutdown_after=*/true},
        BadInput{"StringLongerThanPayload", true,
                 [] {
                   std::string frame = set_frame("key", "value");
                   return with_byte(frame, protocol::kHeaderBytes, 100);  // key length 100
                 }},
        BadInput{"TrailingBytesInPayload", true,
                 [] { return FrameWriter(MessageType::kRemove, 3).str("k").u8(0).finish(); }},
        BadInput{"RequestBeforeHello", false, [] { return set_frame("k", "v"); }},
        BadInput{"SecondHello", true, [] { return hello_frame(5); }},
        BadInput{"UnknownMessageType", true, [] { return FrameWriter(uint16_t{77}, 3).finish(); }},
        BadInput{"ReplyTypeFromClient", true,
                 [] { return FrameWriter(protocol::reply_type(MessageType::kGet), 3).finish(); }}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

TEST_F(StoreTest, SilentConnectionIsClosedAfterTheHeartbeatTimeout) {
  ServerOptions options;
  options.heartbeat_timeout = 300ms;
  start_server(options);
  auto good = connect();  // its heartbeats (100 ms) keep it open
  RawConnection silent("127.0.0.1", server_->port());
  silent.send_bytes(hello_frame(1).substr(0, 30));  // half a frame, then nothing
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.closed_by_peer_within(2000ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  EXPECT_TRUE(good->connected());
  good->set("still", "working");
}

TEST_F(StoreTest, ConnectionsBeyondTheLimitAreRefused) {
  ServerOptions options;
  options.max_connections = 2;
  start_server(options);
  auto first = connect();
  auto second = connect();
  try {
    auto third = connect();
    FAIL() << "a third connection was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kCommunication);
  }
  first->set("k", "v");
  first.reset();
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 1; }, 2000ms));
  auto replacement = connect();
  EXPECT_EQ(replacement->get("k", 0ms), "v");
}

TEST_F(StoreTest, ServerRejectsBadOptions) {
  ServerOptions options;
  options.listen_url = "tcp://no-such-host.invalid:0";  // names resolve; this one cannot
  EXPECT_THROW(Server::start(options), Error);
  options = ServerOptions{};
  options.max_frame_bytes = 10;
  try {
    Server::start(options);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
  }
}

}  // namespace
}  // namespace memloom::store::testing
