// The connections of a data server that have not yet proven they belong to the job
// (wire_format.h's hello and proof). The acceptor thread serves them all through poll(), without a
// thread each, so a connection costs a thread only once it authenticated; each must finish the
// exchange before its deadline, and at most `max_pending` wait at once: an outsider's silent
// connections are dropped, and never keep members out (a new connection evicts the oldest).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "src/smem/trans/job_auth.h"
#include "src/smem/trans/socket_io.h"
#include "src/smem/trans/warning_limiter.h"

namespace memloom::smem::trans {

struct HelloLimits {
  std::chrono::milliseconds deadline{5000};  // from accept to the verified proof
  size_t max_pending = 256;
};

// Sends a whole reply of the hello exchange at once: a member always has room for these few bytes,
// so a socket that does not take them is dropped rather than waited for. False when not all went.
bool send_hello_reply(int fd, int32_t status, const std::vector<uint8_t>& payload);
inline bool send_verdict(int fd, int32_t status, const std::string& message) {
  return send_hello_reply(fd, status, {message.begin(), message.end()});
}

class HelloGate {
 public:
  HelloGate(std::string unique_id, std::string incarnation, const JobSecret& secret,
            HelloLimits limits);

  // Takes a freshly accepted connection; when max_pending wait already, the oldest is dropped.
  void admit(UniqueFd fd);
  // Appends a pollfd per waiting connection, in the order advance() expects them.
  void poll_set(std::vector<pollfd>& fds) const;
  // Moves the connections on by what poll() reported in `fds` (the entries poll_set appended, in
  // order); drops failed and expired ones. Returns the connections whose proof was verified; their
  // initiators wait for the verdict: send_verdict(fd, 0, "") once a thread serves them, a refusal
  // otherwise.
  std::vector<UniqueFd> advance(const pollfd* fds);
  // Milliseconds until the earliest deadline (-1: nothing waits), for poll's timeout.
  int next_deadline_ms() const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class Stage { kHelloHeader, kHelloBody, kProofHeader, kProofBody };
  enum class Verdict { kWaiting, kDrop, kAuthenticated };

  struct Pending {
    UniqueFd fd;
    Clock::time_point deadline;
    Stage stage = Stage::kHelloHeader;
    std::vector<uint8_t> in;  // the current message: `in.size()` bytes are due
    size_t have = 0;
    Nonce initiator_nonce{};
    Nonce server_nonce{};
  };

  Verdict step(Pending& pending);
  Verdict on_message(Pending& pending);
  Verdict on_header(Pending& pending, uint32_t kind, uint64_t min_bytes, uint64_t max_bytes,
                    Stage next);
  Verdict on_hello(Pending& pending);
  Verdict on_proof(Pending& pending);
  bool reply(Pending& pending, int32_t status, const std::vector<uint8_t>& payload);
  void warn(WarningLimiter& limiter, const std::string& what);

  const std::string unique_id_;
  const std::string incarnation_;
  const JobSecret secret_;
  const HelloLimits limits_;
  std::deque<Pending> pending_;  // oldest first: deadlines ascend
  WarningLimiter evicted_warnings_;
  WarningLimiter protocol_warnings_;
  WarningLimiter proof_warnings_;
  WarningLimiter deadline_warnings_;
};

}  // namespace memloom::smem::trans
