// One client must not stall the store for everyone: many parked gets on one key are dropped in
// time linear in their number when their connection goes, and a connection may park only so many.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/store/protocol.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

using protocol::FrameWriter;
using protocol::MessageType;

std::string get_frame(uint64_t request_id, const std::string& key, uint64_t timeout_ms) {
  return FrameWriter(MessageType::kGet, request_id).str(key).u64(timeout_ms).finish();
}

std::string watch_frame(uint64_t request_id, uint64_t watch_id, const std::string& key) {
  return FrameWriter(MessageType::kWatchKey, request_id).u64(watch_id).str(key).finish();
}

uint16_t frame_type(const std::string& frame) {
  uint16_t type = 0;
  std::memcpy(&type, frame.data() + 6, sizeof(type));
  return type;
}

uint64_t frame_request_id(const std::string& frame) {
  uint64_t id = 0;
  std::memcpy(&id, frame.data() + 8, sizeof(id));
  return id;
}

// Sends the hello and waits for its reply, so later frames are not refused as "not hello".
void say_hello(RawConnection& raw) {
  raw.send_bytes(hello_frame(1));
  ASSERT_FALSE(raw.read_frame(5000ms).empty()) << "no hello reply";
}

// Reads frames until one answers `request_id`; returns it, or "" at the deadline.
std::string read_reply_to(RawConnection& raw, uint64_t request_id, Deadline deadline) {
  while (!deadline.expired()) {
    std::string frame = raw.read_frame(deadline.remaining());
    if (frame.empty()) return "";
    if (frame_request_id(frame) == request_id) return frame;
  }
  return "";
}

// 20,000 gets parked on one key by one connection, then a disconnect: the server drops them while
// another client's requests are served within a second (it used to be silent for seconds).
TEST(StoreWaiters, ManyParkedGetsThenDisconnectDoNotStallOthers) {
  ServerOptions options;
  options.max_waiters_per_connection = 0;  // 0: no cap, to build the worst case of the finding
  auto server = Server::start(options);
  auto good = Client::connect(server->url(), quick_client_options());
  constexpr int kParked = 20000;
  {
    RawConnection raw("127.0.0.1", server->port());
    say_hello(raw);
    std::string batch;
    for (int i = 0; i < kParked; ++i) batch += get_frame(100 + i, "hot/key", 60000);
    raw.send_bytes(batch);
    // A request after the gets proves the server has parked all of them.
    raw.send_bytes(FrameWriter(MessageType::kHeartbeat, 7).finish());
    ASSERT_FALSE(read_reply_to(raw, 7, Deadline::after(10000ms)).empty());
  }  // disconnects: the server now forgets 20,000 parked gets
  auto start = std::chrono::steady_clock::now();
  good->set("other/key", "v");
  EXPECT_EQ(good->get("other/key", 0ms), "v");
  EXPECT_EQ(good->get("hot/key", 0ms), std::nullopt);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, 1000ms)
      << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
      << " ms for a set and two gets after the disconnect";
}

// Beyond the per-connection cap, a parked get or a watch is refused with kError (kInvalidValue)
// and a message naming the limit; the connection and what it parked before stay.
TEST(StoreWaiters, ParkedGetsAndWatchesBeyondTheCapAreRefused) {
  ServerOptions options;
  options.max_waiters_per_connection = 16;
  auto server = Server::start(options);
  RawConnection raw("127.0.0.1", server->port());
  say_hello(raw);
  std::string batch;
  for (int i = 0; i < 10; ++i) batch += get_frame(100 + i, "k" + std::to_string(i), 60000);
  for (int i = 0; i < 6; ++i) batch += watch_frame(200 + i, 1 + i, "w" + std::to_string(i));
  raw.send_bytes(batch);
  for (int i = 0; i < 6; ++i) {
    std::string reply = read_reply_to(raw, 200 + i, Deadline::after(5000ms));
    ASSERT_FALSE(reply.empty());
    EXPECT_EQ(frame_type(reply), protocol::reply_type(MessageType::kWatchKey));
  }
  for (const std::string& refused : {get_frame(300, "k-over", 60000), watch_frame(301, 99, "w")}) {
    raw.send_bytes(refused);
    std::string reply = read_reply_to(raw, frame_request_id(refused), Deadline::after(5000ms));
    ASSERT_FALSE(reply.empty()) << "no reply to a request beyond the waiter cap";
    EXPECT_EQ(frame_type(reply), static_cast<uint16_t>(MessageType::kError));
    protocol::PayloadReader reader(std::string_view(reply).substr(protocol::kHeaderBytes), "error");
    EXPECT_EQ(reader.u32(), static_cast<uint32_t>(Status::kInvalidValue));
    EXPECT_NE(reader.str().find("max_waiters_per_connection"), std::string::npos);
  }
  // A get that needs no waiting is not a waiter and is still answered.
  raw.send_bytes(get_frame(400, "missing", 0));
  std::string reply = read_reply_to(raw, 400, Deadline::after(5000ms));
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(frame_type(reply), protocol::reply_type(MessageType::kGet));
}

// The client library sees the refusal as memloom::Error with the server's status.
TEST(StoreWaiters, ClientSeesTheCapAsAnError) {
  ServerOptions options;
  options.max_waiters_per_connection = 2;
  auto server = Server::start(options);
  auto client = Client::connect(server->url(), quick_client_options());
  auto first = client->watch_key("a", [](const WatchEvent&) {});
  auto second = client->watch_key("b", [](const WatchEvent&) {});
  try {
    client->watch_key("c", [](const WatchEvent&) {});
    FAIL() << "a third watch was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidValue);
  }
  client->unwatch(first);
  EXPECT_NO_THROW(client->watch_key("c", [](const WatchEvent&) {}));
  client->unwatch(second);
}

}  // namespace
}  // namespace memloom::store::testing
