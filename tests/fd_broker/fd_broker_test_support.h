// Helpers shared by the FdBroker tests: a memfd with known bytes, a token split into its parts,
// raw client connections to a broker's socket, and a forked child bounded in time.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "src/base/unique_fd.h"

namespace memloom::testing {

inline constexpr char kPayload[] = "memloom fd broker test payload";

// A memfd holding kPayload.
base::UniqueFd make_payload_fd();
// True when fd's file starts with kPayload.
bool holds_payload(int fd);

// "<socket>#<id>.<secret>" split into its parts; ok is false when the token has another form.
struct TokenParts {
  bool ok = false;
  std::string socket;
  std::string id;      // hex
  std::string secret;  // hex
  std::string join() const { return socket + "#" + id + "." + secret; }
};
TokenParts split_token(const std::string& token);

// A non-blocking connection to the broker's abstract socket, retried while its backlog is full.
// Returns an invalid fd when no connection was made within `timeout`.
base::UniqueFd connect_raw(const std::string& socket, std::chrono::milliseconds timeout);
// True when the peer closed `fd` (end of file or reset) within `timeout`.
bool closed_within(int fd, std::chrono::milliseconds timeout);

}  // namespace memloom::testing
