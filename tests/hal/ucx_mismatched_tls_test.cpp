// Two UCX transports of one job whose UCX_TLS disagree: one leaves UCX only host-local transports
// (UCX_TLS=sm,self: its endpoints go without peer error handling, UcxWorker::error_mode), the
// other does not (unset, or tcp: UCP_ERR_HANDLING_MODE_PEER). UCX 1.13 refuses to connect such
// endpoints: the owner's ucp_ep_create fails ("error handling level mismatch") and the requester
// sees only "Endpoint is not connected", within milliseconds. The call must fail that promptly,
// and both sides must name the cause. Each rank is a forked process that sets its UCX_TLS before
// UCX starts in it, as two processes of a misconfigured job would.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "tests/support/multi_process.h"

namespace memloom {
namespace {

using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;
using Clock = std::chrono::steady_clock;

constexpr auto kCallDeadline = std::chrono::seconds(10);
// Well before the deadline: the refusal comes in milliseconds; this leaves a loaded machine room.
constexpr auto kPromptly = std::chrono::seconds(3);
constexpr const char* kSameTls = "every process of a job must use the same UCX_TLS";

std::string setting_of(const std::optional<std::string>& tls, const char* handling) {
  return "UCX_TLS=" + tls.value_or("(unset)") + ", endpoints " + handling + " peer error handling";
}

void set_tls(const std::optional<std::string>& tls) {
  if (tls) {
    ::setenv("UCX_TLS", tls->c_str(), 1);
  } else {
    ::unsetenv("UCX_TLS");
  }
}

// Reads one line from `fd`, waiting at most `timeout`; "" when nothing came.
std::string read_line(int fd, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  std::string line;
  char c = 0;
  while (Clock::now() < until) {
    pollfd pfd{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (::poll(&pfd, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    if (::read(fd, &c, 1) != 1 || c == '\n') return line;
    line.push_back(c);
  }
  return line;
}

// Rank 1 exposes memory under `owner_tls`; rank 0, under `requester_tls`, tries to write and read
// it back. `owner_handling` / `requester_handling`: "with" or "without".
void expect_clear_refusal(const std::optional<std::string>& owner_tls, const char* owner_handling,
                          const std::optional<std::string>& requester_tls,
                          const char* requester_handling) {
  int to_requester[2], to_owner[2];
  ASSERT_EQ(::pipe(to_requester), 0);
  ASSERT_EQ(::pipe(to_owner), 0);
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.start_store = false;
  options.timeout = std::chrono::seconds(40);
  auto results = testing::run_ranks(options, [&](const testing::RankContext& context) {
    hal::TransportOptions transport_options;
    transport_options.job_secret.fill(7);
    if (context.rank == 1) {
      set_tls(owner_tls);
      std::mutex logged_mutex;
      std::string logged;
      log::set_sink([&](log::Level, const std::string& message) {
        std::lock_guard<std::mutex> lock(logged_mutex);
        logged += message + "\n";
      });
      host::UcxTransport owner(transport_options);
      std::vector<uint8_t> exposed(1 << 16, 0);
      owner.expose(exposed.data(), exposed.size());
      const std::string line =
          owner.address() + " " + std::to_string(reinterpret_cast<uint64_t>(exposed.data())) + "\n";
      ASSERT_EQ(::write(to_requester[1], line.data(), line.size()),
                static_cast<ssize_t>(line.size()));
      // Serves until the requester is done.
      read_line(to_owner[0], std::chrono::seconds(30));
      // The refusal is logged by the progress thread, possibly after the requester's call ended.
      const auto until = Clock::now() + kPromptly;
      while (Clock::now() < until) {
        {
          std::lock_guard<std::mutex> lock(logged_mutex);
          if (logged.find("refused a peer's connection") != std::string::npos) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      log::set_sink(nullptr);
      EXPECT_NE(logged.find("refused a peer's connection"), std::string::npos) << logged;
      EXPECT_NE(logged.find(setting_of(owner_tls, owner_handling)), std::string::npos) << logged;
      EXPECT_NE(logged.find(kSameTls), std::string::npos) << logged;
      EXPECT_EQ(exposed, std::vector<uint8_t>(exposed.size(), 0)) << "a byte moved";
      return;
    }
    set_tls(requester_tls);
    host::UcxTransport requester(transport_options);
    std::istringstream in(read_line(to_requester[0], std::chrono::seconds(20)));
    std::string address;
    uint64_t remote = 0;
    in >> address >> remote;
    ASSERT_NE(remote, 0u) << "the owner did not report";
    std::vector<uint8_t> data(1 << 16, 0x5a), back(1 << 16, 0);
    const auto start = Clock::now();
    std::optional<Error> refusal;
    try {
      requester.transfer(address,
                         {Op{Direction::kWrite, remote, data.data(), data.size()},
                          Op{Direction::kRead, remote, back.data(), back.size()}},
                         Deadline::after(kCallDeadline));
    } catch (const Error& error) {
      refusal = error;
    }
    const auto took = Clock::now() - start;
    ASSERT_EQ(::write(to_owner[1], "\n", 1), 1);
    ASSERT_TRUE(refusal.has_value()) << "mismatched UCX_TLS moved data";
    EXPECT_LT(took, kPromptly) << refusal->what();
    EXPECT_EQ(refusal->status(), Status::kCommunication) << refusal->what();
    const std::string message = refusal->what();
    EXPECT_NE(message.find(setting_of(requester_tls, requester_handling)), std::string::npos)
        << message;
    EXPECT_NE(message.find(kSameTls), std::string::npos) << message;
  });
  for (int fd : {to_requester[0], to_requester[1], to_owner[0], to_owner[1]}) ::close(fd);
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(UcxMismatchedTls, SharedMemoryOwnerDefaultRequester) {
  expect_clear_refusal(std::string("sm,self"), "without", std::nullopt, "with");
}
TEST(UcxMismatchedTls, SharedMemoryOwnerTcpRequester) {
  expect_clear_refusal(std::string("sm,self"), "without", std::string("tcp"), "with");
}
TEST(UcxMismatchedTls, DefaultOwnerSharedMemoryRequester) {
  expect_clear_refusal(std::nullopt, "with", std::string("sm,self"), "without");
}
TEST(UcxMismatchedTls, TcpOwnerSharedMemoryRequester) {
  expect_clear_refusal(std::string("tcp"), "with", std::string("sm,self"), "without");
}

}  // namespace
}  // namespace memloom
