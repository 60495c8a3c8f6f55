// Plain TCP helpers of the CUDA backend's transport: listen, connect and whole-buffer send/receive,
// every one bounded by a deadline (poll) so a vanished peer costs at most the deadline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "memloom/deadline.h"
#include "src/base/unique_fd.h"

namespace memloom::cuda {

struct TcpEndpoint {
  std::string host;  // an IPv4 or IPv6 literal
  uint16_t port = 0;
  // "tcp://IP:PORT" or "tcp://[IPv6]:PORT"; throws kInvalidInput otherwise.
  static TcpEndpoint parse(const std::string& url);
  std::string url() const;
};

// Listens on host:0 (any free port); returns the socket and sets the port chosen.
int listen_tcp(const std::string& host, uint16_t* port);
// Connects with TCP_NODELAY; kCommunication if refused, kTimeout at the deadline.
int connect_tcp(const TcpEndpoint& endpoint, Deadline deadline);
// Sends or receives exactly `bytes`; kCommunication when the peer closes or the socket fails,
// kTimeout at the deadline.
void send_all(int fd, const void* data, size_t bytes, Deadline deadline);
void recv_all(int fd, void* data, size_t bytes, Deadline deadline);

// Owns a socket descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  int fd() const { return fd_.get(); }
  // Hands the descriptor to the caller.
  int release() { return fd_.release(); }
  // Wakes up threads blocked on the socket without releasing the descriptor.
  void shutdown();

 private:
  base::UniqueFd fd_;
};

}  // namespace memloom::cuda
