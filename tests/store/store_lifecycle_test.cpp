// Starting and stopping: connect retries, the server going away, client destruction with calls
// in flight, IPv6, and the standalone memloom-store program.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/store/protocol.h"
#include "tests/store/store_test_support.h"
#include "tests/support/status_of.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

using ::memloom::testing::status_of;

// A port nobody listens on right now (bound, read back, released).
uint16_t unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

TEST_F(StoreTest, UrlReportsTheBoundPort) {
  EXPECT_NE(server_->port(), 0);
  EXPECT_EQ(server_->url(), "tcp://127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(StoreTest, BindingABusyPortFails) {
  ServerOptions options;
  options.listen_url = server_->url();
  try {
    Server::start(options);
    FAIL() << "bound a port already in use";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kCommunication);
    EXPECT_NE(std::string(error.what()).find(server_->url()), std::string::npos) << error.what();
  }
}

TEST_F(StoreTest, ConnectionCountFollowsClients) {
  auto a = connect();
  auto b = connect();
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 2; }, 2000ms));
  a.reset();
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 1; }, 2000ms));
}

TEST(StoreClient, BadUrlsAndOptionsAreInvalidInput) {
  EXPECT_EQ(status_of([] { Client::connect("127.0.0.1:1234"); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([] { Client::connect("tcp://127.0.0.1:0"); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([] { Client::connect("tcp://example.com:80"); }), Status::kInvalidInput);
  ClientOptions options = quick_client_options();
  options.heartbeat_timeout = options.heartbeat_interval;
  EXPECT_EQ(status_of([&] { Client::connect("tcp://127.0.0.1:1", options); }),
            Status::kInvalidInput);
}

TEST(StoreClient, ConnectGivesUpAtItsTimeoutWhenNoServerListens) {
  ClientOptions options = quick_client_options();
  options.connect_timeout = 300ms;
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] {
              Client::connect("tcp://127.0.0.1:" + std::to_string(unused_port()), options);
            }),
            Status::kCommunication);
  auto waited = Clock::now() - start;
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 1500ms);
}

TEST_F(StoreTest, ZeroConnectTimeoutTriesOnce) {
  ClientOptions options = quick_client_options();
  options.connect_timeout = 0ms;
  auto client = Client::connect(server_->url(), options);
  client->set("once", "ok");
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] {
              Client::connect("tcp://127.0.0.1:" + std::to_string(unused_port()), options);
            }),
            Status::kCommunication);
  EXPECT_LT(Clock::now() - start, 1500ms);
}

TEST(StoreClient, ConnectRetriesUntilTheServerIsUp) {
  uint16_t port = unused_port();
  std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  std::unique_ptr<Server> server;
  std::thread late_start([&] {
    std::this_thread::sleep_for(300ms);
    ServerOptions options;
    options.listen_url = url;
    server = Server::start(options);
  });
  auto client = Client::connect(url, quick_client_options());
  late_start.join();
  client->set("late", "ok");
  EXPECT_EQ(client->get("late", 0ms), "ok");
}

TEST_F(StoreTest, ServerStopFailsPendingAndLaterCallsWithCommunication) {
  auto client = connect();
  std::atomic<int> pending_status{-1};
  Clock::duration pending_waited{};
  std::thread blocked([&] {
    auto start = Clock::now();
    pending_status = static_cast<int>(status_of([&] { client->get("never", 20000ms); }));
    pending_waited = Clock::now() - start;
  });
  std::this_thread::sleep_for(200ms);
  server_->stop();
  blocked.join();
  EXPECT_EQ(pending_status.load(), static_cast<int>(Status::kCommunication));
  EXPECT_LT(pending_waited, 2000ms);
  EXPECT_TRUE(eventually([&] { return !client->connected(); }, 2000ms));
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] { client->set("k", "v"); }), Status::kCommunication);
  EXPECT_EQ(status_of([&] { client->watch_key("k", [](const WatchEvent&) {}); }),
            Status::kCommunication);
  EXPECT_LT(Clock::now() - start, 500ms);
  client->unwatch(12345);  // harmless on a dead connection
  EXPECT_EQ(server_->connection_count(), 0u);
}

// Accepts one connection, answers the hello, sends `after_hello` (nothing: a server that froze
// without closing its sockets), then reads and ignores everything.
class FakeServer {
 public:
  explicit FakeServer(std::string after_hello = "") : after_hello_(std::move(after_hello)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(listen_fd_, 4);
    socklen_t length = sizeof(address);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  std::string url() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    int fd = -1;
    std::string input;
    bool answered = false;
    while (!stop_) {
      pollfd entry{fd < 0 ? listen_fd_ : fd, POLLIN, 0};
      if (::poll(&entry, 1, 20) <= 0) continue;
      if (fd < 0) {
        fd = ::accept(listen_fd_, nullptr, nullptr);
        continue;
      }
      char buffer[4096];
      ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      input.append(buffer, static_cast<size_t>(n));
      if (!answered && input.size() >= protocol::kHeaderBytes) {
        uint64_t id = 0;
        std::memcpy(&id, input.data() + 8, 8);
        std::string reply =
            protocol::FrameWriter(protocol::reply_type(protocol::MessageType::kHello), id)
                .u16(protocol::kVersion)
                .u64(1 << 20)
                .u64(4096)
                .u64(1 << 20)
                .finish();
        reply += after_hello_;
        ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        answered = true;
      }
    }
    if (fd >= 0) ::close(fd);
  }
  std::string after_hello_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(StoreClient, FrozenServerIsDetectedByMissingHeartbeatReplies) {
  FakeServer frozen;
  ClientOptions options = quick_client_options();
  options.heartbeat_interval = 50ms;
  options.heartbeat_timeout = 300ms;
  auto client = Client::connect(frozen.url(), options);
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] { client->get("k", 10000ms); }), Status::kCommunication);
  EXPECT_LT(Clock::now() - start, 1500ms);
  EXPECT_FALSE(client->connected());
}

TEST(StoreClient, MalformedServerFramesCloseTheConnection) {
  using protocol::FrameWriter;
  using protocol::MessageType;
  std::string unknown_event_kind =
      FrameWriter(MessageType::kEvent, 0).u64(1).u8(9).str("").str("").i64(0).str("").finish();
  for (const std::string& bad :
       {std::string(40, '\x5A'), FrameWriter(MessageType::kSet, 1).finish(), unknown_event_kind,
        FrameWriter(MessageType::kEvent, 0).u64(1).finish()}) {
    FakeServer server(bad);
    auto client = Client::connect(server.url(), quick_client_options());
    EXPECT_TRUE(eventually([&] { return !client->connected(); }, 2000ms));
    EXPECT_EQ(status_of([&] { client->get("k", 0ms); }), Status::kCommunication);
  }
}

TEST_F(StoreTest, DestroyingAClientWithCallsInFlightFailsThemCleanly) {
  auto client = connect();
  constexpr int kThreads = 8;
  std::atomic<int> started{0};
  std::atomic<int> communication_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t, raw = client.get()] {
      ++started;
      if (status_of([&] { raw->get("never/" + std::to_string(t), 20000ms); }) ==
          Status::kCommunication) {
        ++communication_errors;
      }
    });
  }
  ASSERT_TRUE(eventually([&] { return started.load() == kThreads; }, 2000ms));
  std::this_thread::sleep_for(200ms);  // let every thread reach its blocking get
  auto start = Clock::now();
  client.reset();
  EXPECT_LT(Clock::now() - start, 2000ms);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(communication_errors.load(), kThreads);
  EXPECT_TRUE(eventually([&] { return server_->connection_count() == 0; }, 2000ms));
}

TEST(StoreIpv6, ServesOnTheIpv6Loopback) {
  ServerOptions options;
  options.listen_url = "tcp://[::1]:0";
  std::unique_ptr<Server> server;
  try {
    server = Server::start(options);
  } catch (const Error& error) {
    GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
  }
  EXPECT_EQ(server->url(), "tcp://[::1]:" + std::to_string(server->port()));
  auto client = Client::connect(server->url(), quick_client_options());
  client->set("v6", "works");
  EXPECT_EQ(client->get("v6", 0ms), "works");
}

// ---- the standalone program -------------------------------------------------------------

struct Program {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

Program spawn_store(const std::vector<std::string>& args) {
  int out[2], err[2];
  if (::pipe(out) != 0 || ::pipe(err) != 0) throw std::runtime_error("pipe failed");
  Program program;
  program.pid = ::fork();
  if (program.pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> argv{const_cast<char*>(MEMLOOM_STORE_PROGRAM)};
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(MEMLOOM_STORE_PROGRAM, argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  program.stdout_fd = out[0];
  program.stderr_fd = err[0];
  return program;
}

// Reads until `fd` reaches EOF, `stop_at` appears or the deadline passes.
std::string read_output(int fd, std::chrono::milliseconds timeout, const std::string& stop_at) {
  Deadline deadline = Deadline::after(timeout);
  std::string text;
  while (!deadline.expired()) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, deadline.poll_timeout_ms(50)) <= 0) continue;
    char buffer[1024];
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (!stop_at.empty() && text.find(stop_at) != std::string::npos) break;
  }
  return text;
}

// Waits for the process to exit; returns its wait status or -1 after killing it at the deadline.
int wait_exit(const Program& program, std::chrono::milliseconds timeout) {
  Deadline deadline = Deadline::after(timeout);
  int status = 0;
  while (::waitpid(program.pid, &status, WNOHANG) == 0) {
    if (deadline.expired()) {
      ::kill(program.pid, SIGKILL);
      ::waitpid(program.pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
  ::close(program.stdout_fd);
  ::close(program.stderr_fd);
  return status;
}

TEST(StoreProgram, ServesUntilSigterm) {
  Program program = spawn_store({"--listen", "tcp://127.0.0.1:0", "--heartbeat-timeout-ms", "2000",
                                 "--max-frame-bytes", "1M"});
  std::string line = read_output(program.stdout_fd, 5000ms, "\n");
  const std::string prefix = "memloom-store listening on ";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << "output: " << line;
  std::string url = line.substr(prefix.size(), line.size() - prefix.size() - 1);
  {
    auto client = Client::connect(url, quick_client_options());
    client->set("standalone", "yes");
    EXPECT_EQ(client->get("standalone", 0ms), "yes");
    // The frame limit option took effect: 2 MiB is refused before it is sent.
    EXPECT_EQ(status_of([&] { client->set("big", std::string(2 << 20, 'x')); }),
              Status::kInvalidInput);
  }
  ::kill(program.pid, SIGTERM);
  int status = wait_exit(program, 5000ms);
  ASSERT_NE(status, -1) << "memloom-store ignored SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
}

TEST(StoreProgram, HelpDocumentsEveryOption) {
  Program program = spawn_store({"--help"});
  std::string help = read_output(program.stdout_fd, 5000ms, "");
  EXPECT_EQ(wait_exit(program, 5000ms), 0);
  for (const char* option : {"--listen", "--heartbeat-timeout-ms", "--max-frame-bytes",
                             "--max-value-bytes", "--max-key-bytes", "--max-connections"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option << " missing from:\n" << help;
  }
}

TEST(StoreProgram, BadArgumentsExitWithUsageError) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--listen", "tcp://nowhere:1"},
        {"--bogus", "1"},
        {},
        {"--listen", "tcp://127.0.0.1:0", "--max-frame-bytes", "lots"}}) {
    Program program = spawn_store(args);
    std::string error = read_output(program.stderr_fd, 5000ms, "");
    int status = wait_exit(program, 5000ms);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << "wait status " << status;
    EXPECT_NE(error.find("memloom-store:"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace memloom::store::testing
