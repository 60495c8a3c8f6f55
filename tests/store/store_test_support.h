// Helpers shared by the store tests: an embedded server, clients with short timeouts, and raw
// sockets for feeding the server bytes a real client never sends.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// A store the conformance suites run against: memloom's TCP store (store_tcp_instance.cpp) or an
// etcd cluster (tests/etcd). Each test binary instantiates the suites with its own.
class TestStore {
 public:
  virtual ~TestStore() = default;
  virtual std::string url() = 0;
  // The TCP server, for checks only it can answer (nullptr for etcd).
  virtual Server* tcp_server() { return nullptr; }
  // Adds what a client of this store needs besides the URL (TLS).
  virtual void configure(ClientOptions& /*options*/) {}
};

struct StoreKind {
  std::string name;  // the instantiation's test name suffix ("Tcp", "Etcd")
  std::function<std::unique_ptr<TestStore>()> make;
};

// The fixture of the suites that every store must pass (StoreOperations, StoreConcurrency,
// StoreWatch). Each test's clients share a job namespace of their own (etcd: a key prefix).
class StoreConformance : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override { store_ = GetParam().make(); }
  void TearDown() override { store_.reset(); }
  std::unique_ptr<Client> connect(ClientOptions options = quick_client_options());
  Server* tcp_server() { return store_->tcp_server(); }
  std::unique_ptr<TestStore> store_;
};

class StoreOperations : public StoreConformance {};
class StoreWatch : public StoreConformance {};
// Many clients and threads at once.
class StoreConcurrency : public StoreConformance {
 protected:
  // Runs body(thread index) on `count` threads and joins them; failures inside are counted.
  void run_threads(int count, const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    std::atomic<int> errors{0};
    for (int t = 0; t < count; ++t) {
      threads.emplace_back([&, t] {
        try {
          body(t);
        } catch (const std::exception& error) {
          ADD_FAILURE() << "thread " << t << ": " << error.what();
          ++errors;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(errors.load(), 0);
  }
};

// The memloom TCP store as a TestStore.
StoreKind tcp_store_kind();

// Instantiates the conformance suites with `kind` (one call per test binary).
#define MEMLOOM_INSTANTIATE_STORE_CONFORMANCE(prefix, kind)                   \
  INSTANTIATE_TEST_SUITE_P(prefix, StoreOperations, ::testing::Values(kind),  \
                           [](const auto& info) { return info.param.name; }); \
  INSTANTIATE_TEST_SUITE_P(prefix, StoreConcurrency, ::testing::Values(kind), \
                           [](const auto& info) { return info.param.name; }); \
  INSTANTIATE_TEST_SUITE_P(prefix, StoreWatch, ::testing::Values(kind),       \
                           [](const auto& info) { return info.param.name; })

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
