// Helpers shared by the store tests: an embedded server, clients with short timeouts, and raw
// sockets for feeding the server bytes a real client never sends.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

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

// Polls `condition` every few ms until true or `timeout`; returns the last result.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace memloom::store::testing
