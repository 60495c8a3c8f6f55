// The broker's service under load: idle or half-sent connections of the same account neither
// delay a fetch nor are held past their own deadline, connections past the cap are closed at once,
// and a forked child and its parent still fetch each other's descriptors.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/fd_broker.h"
#include "tests/fd_broker/fd_broker_test_support.h"
#include "tests/support/forked_child.h"

namespace memloom::testing {
namespace {

using core::FdBroker;
using namespace std::chrono_literals;

std::string socket_of(const std::string& token) {
  return token.substr(0, token.rfind('#'));
}

// Idle connections, and connections that sent part of a request, are what an attacker of the same
// account can cheaply hold.
std::vector<base::UniqueFd> open_stalled(const std::string& socket, int count) {
  std::vector<base::UniqueFd> connections;
  for (int i = 0; i < count; ++i) {
    base::UniqueFd connection = connect_raw(socket, 1s);
    if (!connection.valid()) break;
    if (i % 2 == 1) (void)::send(connection.get(), "ML", 2, MSG_NOSIGNAL | MSG_DONTWAIT);
    connections.push_back(std::move(connection));
  }
  return connections;
}

TEST(FdBrokerService, StalledConnectionsDoNotDelayAFetch) {
  base::UniqueFd file = make_payload_fd();
  const std::string token = FdBroker::instance().publish(file.get());
  const auto stalled = open_stalled(socket_of(token), 64);
  ASSERT_EQ(stalled.size(), 64u);
  const auto start = std::chrono::steady_clock::now();
  try {
    base::UniqueFd fetched(FdBroker::fetch(token, Deadline::after(1s)));
    EXPECT_TRUE(holds_payload(fetched.get()));
  } catch (const Error& error) {
    ADD_FAILURE() << "fetch behind 64 stalled connections failed: " << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  FdBroker::instance().withdraw(token);
}

TEST(FdBrokerService, ConnectionsBeyondTheCapAreClosedAtOnce) {
  base::UniqueFd file = make_payload_fd();
  const std::string token = FdBroker::instance().publish(file.get());
  constexpr int kExtra = 8;
  const auto stalled = open_stalled(socket_of(token), FdBroker::kMaxConnections + kExtra);
  ASSERT_EQ(stalled.size(), static_cast<size_t>(FdBroker::kMaxConnections + kExtra));
  std::this_thread::sleep_for(300ms);  // well inside the held connections' own deadline
  int closed = 0;
  for (const auto& connection : stalled) closed += closed_within(connection.get(), 0ms) ? 1 : 0;
  EXPECT_EQ(closed, kExtra) << "only the connections past the cap are closed at once";
  // Each held connection is dropped on its own deadline, then the broker serves again.
  int held_past_deadline = 0;
  for (const auto& connection : stalled) {
    held_past_deadline += closed_within(connection.get(), 4s) ? 0 : 1;
  }
  EXPECT_EQ(held_past_deadline, 0);
  base::UniqueFd fetched(FdBroker::fetch(token, Deadline::after(1s)));
  EXPECT_TRUE(holds_payload(fetched.get()));
  FdBroker::instance().withdraw(token);
}

TEST(FdBrokerService, ParentAndForkedChildFetchEachOthersDescriptors) {
  base::UniqueFd file = make_payload_fd();
  const std::string token = FdBroker::instance().publish(file.get());
  EXPECT_EQ(run_in_child(
                [&token] {
                  base::UniqueFd fetched(FdBroker::fetch(token, Deadline::after(2s)));
                  return holds_payload(fetched.get()) ? 0 : 1;
                },
                10s)
                .exit_code,
            0)
      << "a forked child fetches its parent's descriptor";

  // The child serves its own publications (its own broker) until the parent has fetched one.
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  base::UniqueFd parent_read(to_parent[0]), parent_write(to_parent[1]);
  base::UniqueFd child_read(to_child[0]), child_write(to_child[1]);
  int child_code = -1;
  std::thread waiter([&] {
    child_code = run_in_child(
                     [&] {
                       base::UniqueFd own = make_payload_fd();
                       const std::string mine = FdBroker::instance().publish(own.get());
                       if (::write(parent_write.get(), mine.data(), mine.size()) !=
                           static_cast<ssize_t>(mine.size()))
                         return 1;
                       pollfd done{child_read.get(), POLLIN, 0};
                       return ::poll(&done, 1, 5000) == 1 ? 0 : 2;
                     },
                     10s)
                     .exit_code;
  });
  std::string child_token;
  char buffer[256];
  pollfd ready{parent_read.get(), POLLIN, 0};
  if (::poll(&ready, 1, 5000) == 1) {
    const ssize_t got = ::read(parent_read.get(), buffer, sizeof(buffer));
    if (got > 0) child_token.assign(buffer, static_cast<size_t>(got));
  }
  EXPECT_FALSE(child_token.empty()) << "the child published nothing";
  if (!child_token.empty()) {
    EXPECT_NE(socket_of(child_token), socket_of(token)) << "the child runs its own broker";
    try {
      base::UniqueFd fetched(FdBroker::fetch(child_token, Deadline::after(2s)));
      EXPECT_TRUE(holds_payload(fetched.get()));
    } catch (const Error& error) {
      ADD_FAILURE() << "fetch from the forked child failed: " << error.what();
    }
  }
  ASSERT_EQ(::write(child_write.get(), "x", 1), 1);
  waiter.join();
  EXPECT_EQ(child_code, 0);
  FdBroker::instance().withdraw(token);
}

}  // namespace
}  // namespace memloom::testing
