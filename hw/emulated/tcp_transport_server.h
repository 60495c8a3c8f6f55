// The serving end of the emulated Transport: one listening socket and one thread that answers
// the batches of every connected peer against the memory this process exposed (see tcp_wire.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <thread>

namespace memloom::emulated {

class TcpTransportServer {
 public:
  // Binds to host_address() on an ephemeral port and starts serving.
  TcpTransportServer();
  ~TcpTransportServer();
  TcpTransportServer(const TcpTransportServer&) = delete;
  TcpTransportServer& operator=(const TcpTransportServer&) = delete;

  const std::string& address() const { return address_; }
  // Exposed ranges may not overlap; withdraw takes the start of an exposed range and waits for
  // a batch in progress to finish.
  void expose(void* address, size_t size);
  void withdraw(void* address);

 private:
  void serve();
  bool answer(int connection);                                      // false: drop the connection
  std::string check_range(uint64_t address, uint64_t bytes) const;  // "" when exposed

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::string address_;
  mutable std::shared_mutex ranges_mutex_;
  std::map<uintptr_t, size_t> ranges_;  // start -> size
  std::thread thread_;
};

}  // namespace memloom::emulated
