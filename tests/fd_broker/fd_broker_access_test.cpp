// Who may fetch a published descriptor: only a process of the same account that holds the exact
// token. Another account (nobody, from a forked child) is refused at once, and guessed tokens
// (sequential ids, neighbouring ids, wrong secrets) find nothing.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/fd_broker.h"
#include "tests/fd_broker/fd_broker_test_support.h"
#include "tests/support/forked_child.h"

namespace memloom::testing {
namespace {

using core::FdBroker;
using namespace std::chrono_literals;

// The status a fetch ends with; kSuccess when it returned a descriptor (closed here).
Status fetch_status(const std::string& token, std::chrono::milliseconds timeout = 2000ms) {
  try {
    base::UniqueFd fd(FdBroker::fetch(token, Deadline::after(timeout)));
    return Status::kSuccess;
  } catch (const Error& error) {
    return error.status();
  }
}

struct Published {
  base::UniqueFd file = make_payload_fd();
  std::string token = FdBroker::instance().publish(file.get());
  ~Published() { FdBroker::instance().withdraw(token); }
};

std::string hex_id(unsigned long long value, size_t width) {
  char text[32];
  std::snprintf(text, sizeof(text), "%0*llx", static_cast<int>(width), value);
  return text;
}

TEST(FdBrokerAccess, OtherUserCannotFetchWithTheRightToken) {
  if (!other_user_available()) GTEST_SKIP() << "needs root to become another user";
  Published published;
  {
    base::UniqueFd mine(FdBroker::fetch(published.token, Deadline::after(2s)));
    ASSERT_TRUE(holds_payload(mine.get()));
  }
  const std::string token = published.token;
  const ChildResult result = run_as_other_user(
      [&token] {
        try {
          base::UniqueFd fd(FdBroker::fetch(token, Deadline::after(2s)));
          return holds_payload(fd.get()) ? 1 : 2;
        } catch (const Error& error) {
          return error.status() == Status::kCommunication ? 0 : 3;
        }
      },
      10s);
  EXPECT_EQ(result.exit_code, 0) << result.describe()
                                 << " (1: read the memory, 2: got a descriptor, 3: another error)";
}

// The broker closes another account's connection before reading anything: whatever it sends, it
// gets no descriptor and cannot hold a connection.
TEST(FdBrokerAccess, OtherUsersConnectionsAreClosedAtOnce) {
  if (!other_user_available()) GTEST_SKIP() << "needs root to become another user";
  Published published;
  const std::string socket = published.token.substr(0, published.token.rfind('#'));
  std::atomic<int> warnings{0};
  log::set_sink([&warnings](log::Level level, const std::string& message) {
    if (level == log::Level::kWarn && message.find("65534") != std::string::npos) ++warnings;
  });
  const ChildResult result = run_as_other_user(
      [&socket, &published] {
        const auto start = std::chrono::steady_clock::now();
        std::vector<base::UniqueFd> connections;
        for (int i = 0; i < 16; ++i) {
          connections.push_back(connect_raw(socket, 500ms));
          if (!connections.back().valid()) return 1;
          // Half stay idle; the others send the token's own bytes, the most an attacker could know.
          if (i % 2 == 1) {
            (void)::send(connections.back().get(), published.token.data(), published.token.size(),
                         MSG_NOSIGNAL | MSG_DONTWAIT);
          }
        }
        for (auto& connection : connections) {
          if (!closed_within(connection.get(), 500ms)) return 2;
        }
        return std::chrono::steady_clock::now() - start < 1s ? 0 : 3;
      },
      10s);
  log::set_sink(nullptr);
  EXPECT_EQ(result.exit_code, 0) << result.describe()
                                 << " (1: no connection, 2: a connection was held, 3: too slow)";
  EXPECT_LE(warnings.load(), 1) << "refusals are logged at most once per interval";
}

TEST(FdBrokerAccess, GuessedIdsAndWrongSecretsFindNothing) {
  Published first;
  Published second;
  const TokenParts a = split_token(first.token);
  const TokenParts b = split_token(second.token);
  ASSERT_TRUE(a.ok) << "token '" << first.token << "' carries no secret";
  ASSERT_TRUE(b.ok) << "token '" << second.token << "' carries no secret";
  ASSERT_EQ(fetch_status(first.token), Status::kSuccess);
  ASSERT_EQ(fetch_status(second.token), Status::kSuccess);

  // Sequential ids, as the broker once handed out, bare or with a secret.
  for (unsigned long long id = 0; id < 16; ++id) {
    EXPECT_NE(fetch_status(a.socket + "#" + std::to_string(id)), Status::kSuccess) << id;
    TokenParts guess = a;
    guess.id = hex_id(id, a.id.size());
    EXPECT_EQ(fetch_status(guess.join()), Status::kNotFound) << guess.join();
  }
  // Neighbouring ids with the right secret.
  const unsigned long long id = std::stoull(a.id, nullptr, 16);
  for (unsigned long long neighbour : {id - 1, id + 1}) {
    TokenParts guess = a;
    guess.id = hex_id(neighbour, a.id.size());
    EXPECT_EQ(fetch_status(guess.join()), Status::kNotFound) << guess.join();
  }
  // Wrong secrets: one digit changed at either end, all zeros, another publication's secret.
  for (size_t position : {size_t{0}, a.secret.size() - 1}) {
    TokenParts guess = a;
    guess.secret[position] = guess.secret[position] == '0' ? '1' : '0';
    EXPECT_EQ(fetch_status(guess.join()), Status::kNotFound) << guess.join();
  }
  TokenParts zeros = a;
  zeros.secret.assign(a.secret.size(), '0');
  EXPECT_EQ(fetch_status(zeros.join()), Status::kNotFound);
  TokenParts swapped = a;
  swapped.secret = b.secret;
  EXPECT_EQ(fetch_status(swapped.join()), Status::kNotFound);

  // The error names the publication without repeating its secret (messages reach logs).
  TokenParts wrong = a;
  wrong.secret[0] = wrong.secret[0] == '0' ? '1' : '0';
  try {
    base::UniqueFd fd(FdBroker::fetch(wrong.join(), Deadline::after(2s)));
    ADD_FAILURE() << "a wrong secret fetched a descriptor";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).find(wrong.secret), std::string::npos) << error.what();
  }
}

TEST(FdBrokerAccess, ErrorsNameTheCause) {
  std::string token;
  {
    Published published;
    token = published.token;
  }
  EXPECT_EQ(fetch_status(token), Status::kNotFound) << "a withdrawn token";
  const std::string gone = "memloom-fd.0.gone" + token.substr(token.rfind('#'));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fetch_status(gone), Status::kCommunication) << "an owner that is gone";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(fetch_status("no-hash-sign"), Status::kInvalidInput);
}

}  // namespace
}  // namespace memloom::testing
