// FdBroker: passes file descriptors (memory segments, CUDA VMM handles) between processes of one
// node. Each process serves the fds it published on a Linux abstract Unix socket, so nothing is
// created on disk and nothing is left behind when the process dies.
//
// Anyone on the host can see and connect to an abstract socket, so the broker itself decides who
// gets a descriptor: only a peer running as the broker's own user (SO_PEERCRED, checked at accept)
// that presents a publication's random id and 128-bit secret (the token, which travels only
// through the job's config store). One thread serves every connection through poll(), each with
// its own deadline and up to a cap, so idle or slow clients cannot hold up the others.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "memloom/deadline.h"
#include "src/core/fd_token.h"

namespace memloom::core {

class FdBroker {
 public:
  // Connections served at once; one arriving beyond this is closed at once.
  static constexpr int kMaxConnections = 256;
  // How long a connection may take to send its request before it is dropped.
  static constexpr std::chrono::milliseconds kRequestTimeout{2000};
  // The longest token publish() returns (a RegionTable slot keeps 87 characters).
  static constexpr size_t kMaxTokenLength = 80;

  // The process-wide broker, started on first use (and restarted in a forked child).
  static FdBroker& instance();

  // Keeps a duplicate of fd; returns a token "<socket>#<id>.<secret>" for fetch(). The token is a
  // capability: pass it only to the job's ranks (through the config store), never to logs.
  std::string publish(int fd);
  void withdraw(const std::string& token);
  // Returns a new fd for the token's file. Throws kInvalidInput for a malformed token, kNotFound if
  // the owner does not publish it (withdrawn, or a wrong id or secret), kCommunication if the owner
  // is gone, runs as another user, or closed the connection (it refuses other users and
  // connections beyond its cap), kTimeout at the deadline.
  static int fetch(const std::string& token, Deadline deadline);

  ~FdBroker();
  FdBroker(const FdBroker&) = delete;
  FdBroker& operator=(const FdBroker&) = delete;

 private:
  struct Publication {
    int fd = -1;
    FdSecret secret{};
  };
  struct Connection;

  FdBroker();
  void serve();
  void accept_pending(std::vector<Connection>& connections);
  bool allowed(int connection);
  bool advance(Connection& connection);
  void answer(const Connection& connection);

  std::string socket_name_;
  uid_t uid_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mutex_;
  std::map<uint64_t, Publication> published_;
  // Serving thread only: when accept() may run again after running out of descriptors, and the
  // warnings (at most one per interval) about refused users and a full cap.
  Deadline::Clock::time_point accept_paused_until_{};
  Deadline::Clock::time_point next_refusal_warning_{};
  uint64_t refusals_unreported_ = 0;
  Deadline::Clock::time_point next_overflow_warning_{};
  uint64_t overflows_unreported_ = 0;
};

}  // namespace memloom::core
