// Helpers shared by the store tests: an embedded server, clients with short timeouts, and raw
// sockets for feeding the server bytes a real client never sends.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/store/client.h"
#include "src/store/server.h"

namespace memloom::store::testing {

using namespace std::chrono_literals;

inline ClientOptions quick_client_options() {
  ClientOptions options;
  options.connect_timeout = 5000ms;
  options.heartbeat_interval = 100ms;
  options.heartbeat_timeout = 1000ms;
  return options;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { start_server(ServerOptions{}); }
  void start_server(ServerOptions options) {
    server_.reset();
    server_ = Server::start(options);
  }
  std::unique_ptr<Client> connect(ClientOptions options = quick_client_options()) {
    return Client::connect(server_->url(), options);
  }
  std::unique_ptr<Server> server_;
};

// A plain TCP connection to host:port (blocking), closed on destruction.
class RawConnection {
 public:
  RawConnection(const std::string& host, uint16_t port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  void send_bytes(const std::string& bytes);
  void shutdown_write();
  // Waits up to `timeout` for the server to close the connection (reads and discards data).
  bool closed_by_peer_within(std::chrono::milliseconds timeout);
  // Reads one whole frame (header + payload) or returns "" on timeout/close.
  std::string read_frame(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
};

// A valid hello frame (the first frame every connection must send).
std::string hello_frame(uint64_t request_id, int rank = -1, const std::string& group = "");

// Collects watch events from the client's event thread for the test thread to wait on.
class EventLog {
 public:
  WatchCallback callback() {
    return [this](const WatchEvent& event) {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(event);
      changed_.notify_all();
    };
  }
  // Waits until at least `count` events arrived; returns a copy of all of them.
  std::vector<WatchEvent> wait_for(size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return events_.size() >= count; });
    return events_;
  }
  std::vector<WatchEvent> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<WatchEvent> events_;
};

// Polls `condition` every few ms until true or `timeout`; returns the last result.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace memloom::store::testing
