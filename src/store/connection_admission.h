// Who may hold one of the store's connections. A connection is *unauthenticated* until it proves
// it is a store client: with TLS, until its handshake finished (the peer's certificate chains to
// our CA); without TLS, until its first valid frame (the hello) was processed. Unauthenticated
// connections get a budget of their own, smaller than the connection cap, and a deadline to
// authenticate; when a new connection finds the budget (or the whole cap) full, the oldest
// unauthenticated one is evicted. So idle or half-open connections can never lock out real
// clients: cap minus budget is reserved for authenticated ones, and a new client always gets in
// unless every slot is held by authenticated clients.
//
// Not thread-safe: the server's I/O thread owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace memloom::store {

struct AdmissionLimits {
  size_t max_connections = 0;      // every open connection, authenticated or not
  size_t max_unauthenticated = 0;  // at most max_connections
};

// The connection cap the process can honour: `configured`, lowered to the RLIMIT_NOFILE soft
// limit minus a reserve for the rest of the process (files, the listening socket, peers' shared
// memory), so the cap is met before accept() fails with EMFILE. *why describes the choice.
size_t connection_cap_for_fd_limit(size_t configured, std::string* why);

class ConnectionAdmission {
 public:
  using Clock = std::chrono::steady_clock;
  // Closes the connection and forgets it in the owner's tables; must not call back into this.
  using Evict = std::function<void(const std::string& reason)>;

  explicit ConnectionAdmission(AdmissionLimits limits) : limits_(limits) {}

  // For a newly accepted connection, with `open` connections already held: true if it may stay.
  // Evicts the oldest unauthenticated connection when the budget or the cap is full.
  bool admit(size_t open);
  // Registers a connection until it authenticates, closes, or misses `deadline`.
  uint64_t add_unauthenticated(Clock::time_point deadline, Evict evict);
  // The connection authenticated or closed: it no longer counts (unknown tickets are ignored).
  void remove(uint64_t ticket) { pending_.erase(ticket); }
  // Evicts every connection past its deadline; returns how many.
  size_t evict_overdue(Clock::time_point now);

  size_t unauthenticated() const { return pending_.size(); }
  const AdmissionLimits& limits() const { return limits_; }

 private:
  struct Pending {
    Clock::time_point deadline;
    Evict evict;
  };
  void evict_oldest(const std::string& reason);

  AdmissionLimits limits_;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, Pending> pending_;  // by ticket, i.e. oldest first
};

}  // namespace memloom::store
