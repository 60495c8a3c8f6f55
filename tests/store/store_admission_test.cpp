// Connection admission: running out of file descriptors must not make the store spin or flood its
// log, and idle connections that never authenticate must not lock out real clients.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

// memloom-store in a child process under a tiny RLIMIT_NOFILE, its stdout and stderr piped back.
// The destructor kills it if a check failed before stop().
class LimitedStoreProcess {
 public:
  // `inherited_fds` descriptors stay open in the child, so it meets EMFILE before its own cap.
  LimitedStoreProcess(rlim_t fd_limit, int inherited_fds) {
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      int null_fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC: these survive the exec
      for (int i = 1; i < inherited_fds; ++i) {
        if (::dup(null_fd) < 0) ::_exit(126);
      }
      rlimit limit{fd_limit, fd_limit};
      ::setrlimit(RLIMIT_NOFILE, &limit);
      ::alarm(30);  // bounded even if the test process dies before it kills this one
      ::execl(MEMLOOM_STORE_PROGRAM, MEMLOOM_STORE_PROGRAM, "--listen", "tcp://127.0.0.1:0",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~LimitedStoreProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
    ::close(err_);
  }

  // Reads the "listening on tcp://127.0.0.1:PORT" line; 0 if it does not come.
  uint16_t port() {
    std::string text;
    Deadline deadline = Deadline::after(10000ms);
    while (text.find('\n') == std::string::npos && !deadline.expired()) {
      pollfd entry{out_, POLLIN, 0};
      if (::poll(&entry, 1, deadline.poll_timeout_ms(100)) <= 0) continue;
      char buffer[256];
      ssize_t n = ::read(out_, buffer, sizeof(buffer));
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    auto colon = text.rfind(':');
    return colon == std::string::npos ? 0
                                      : static_cast<uint16_t>(std::stoi(text.substr(colon + 1)));
  }

  // Drains stderr while it runs (a full pipe would block the child and hide a spin).
  void drain_for(std::chrono::milliseconds duration) {
    Deadline deadline = Deadline::after(duration);
    while (!deadline.expired()) {
      pollfd entry{err_, POLLIN, 0};
      if (::poll(&entry, 1, deadline.poll_timeout_ms(50)) <= 0) continue;
      char buffer[65536];
      ssize_t n = ::read(err_, buffer, sizeof(buffer));
      if (n <= 0) return;
      for (ssize_t i = 0; i < n; ++i) log_lines_ += buffer[i] == '\n';
      if (log_text_.size() < 4096) log_text_.append(buffer, static_cast<size_t>(n));
    }
  }

  // Stops the child; returns the CPU seconds (user + system) it used.
  double stop() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    rusage usage{};
    ::wait4(pid_, &status, 0, &usage);
    pid_ = -1;
    drain_for(200ms);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }
  size_t log_lines() const { return log_lines_; }
  const std::string& log_text() const { return log_text_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  size_t log_lines_ = 0;
  std::string log_text_;
};

// 100 connections to a store allowed 64 descriptors, some taken before it starts: it must refuse
// or back off, not spin on accept (it used to burn a core and log millions of lines).
void expect_no_spin(int inherited_fds) {
  LimitedStoreProcess store(64, inherited_fds);
  uint16_t port = store.port();
  ASSERT_NE(port, 0) << "memloom-store did not start";
  std::vector<std::unique_ptr<RawConnection>> connections;
  for (int i = 0; i < 100; ++i) {
    connections.push_back(std::make_unique<RawConnection>("127.0.0.1", port));
  }
  store.drain_for(3000ms);
  double cpu_seconds = store.stop();
  EXPECT_LT(cpu_seconds, 0.5) << "memloom-store used " << cpu_seconds << " s of CPU in 3 s";
  EXPECT_LT(store.log_lines(), 40u) << "first lines:\n" << store.log_text();
}

TEST(StoreAdmission, FdLimitDoesNotMakeTheStoreSpin) {
  expect_no_spin(0);
}

TEST(StoreAdmission, EmfileBacksOffAndLogsOncePerInterval) {
  expect_no_spin(40);
}

// 4,096 connections that never send a frame fill the old connection cap; a real client that
// sends its hello must still get in (idle unauthenticated connections are evicted first).
TEST(StoreAdmission, IdleUnauthenticatedConnectionsDoNotLockOutClients) {
  auto server = Server::start(ServerOptions{});
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 4096; ++i) {
    idle.push_back(std::make_unique<RawConnection>("127.0.0.1", server->port()));
  }
  ClientOptions options = quick_client_options();
  options.connect_timeout = 3000ms;
  std::unique_ptr<Client> client;
  ASSERT_NO_THROW(client = Client::connect(server->url(), options));
  client->set("k", "v");
  EXPECT_EQ(client->get("k", 0ms), "v");
}

}  // namespace
}  // namespace memloom::store::testing
