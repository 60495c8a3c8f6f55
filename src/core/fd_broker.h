// FdBroker: passes file descriptors (memory segments, CUDA VMM handles) between processes of one
// node. Each process serves the fds it published on a Linux abstract Unix socket, so nothing is
// created on disk and nothing is left behind when the process dies.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "memloom/deadline.h"

namespace memloom::core {

class FdBroker {
 public:
  // The process-wide broker, started on first use (and restarted in a forked child).
  static FdBroker& instance();

  // Keeps a duplicate of fd; returns a token "<socket>#<id>" another process passes to fetch().
  std::string publish(int fd);
  void withdraw(const std::string& token);
  // Returns a new fd for the token's file. Throws kNotFound if the owner no longer publishes it,
  // kCommunication if the owner is gone, kTimeout at the deadline.
  static int fetch(const std::string& token, Deadline deadline);

  ~FdBroker();
  FdBroker(const FdBroker&) = delete;
  FdBroker& operator=(const FdBroker&) = delete;

 private:
  FdBroker();
  void serve();
  void answer(int connection);

  std::string socket_name_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mutex_;
  std::map<uint64_t, int> published_;
  uint64_t next_id_ = 1;
};

}  // namespace memloom::core
