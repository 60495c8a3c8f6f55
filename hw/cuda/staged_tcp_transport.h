// The CUDA backend's Transport: reads and writes of a peer's exposed memory over TCP, for ranks on
// other nodes. Either side's memory may be on a GPU; SocketStager stages it through pinned host
// buffers, so the same wire carries device and host memory alike.
//
// Wire: a request header per op (a write's payload follows it), answered in order by a response
// header (a read's payload follows it). A refused op (outside the exposed ranges) is answered
// with its status and message, and its payload is drained, so the connection stays usable. A
// transfer of several ops sends on one thread while it receives on another, so neither side can
// block the other with full socket buffers.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "hw/cuda/socket_stager.h"
#include "hw/cuda/tcp_socket.h"
#include "hw/hal/transport.h"
#include "src/base/range_map.h"

namespace memloom::cuda {

class StagedTcpTransport : public hal::Transport {
 public:
  // Listens on MEMLOOM_HOST_ADDR (default 127.0.0.1), any free port. Staging uses `device`.
  explicit StagedTcpTransport(int device);
  ~StagedTcpTransport() override;
  StagedTcpTransport(const StagedTcpTransport&) = delete;
  StagedTcpTransport& operator=(const StagedTcpTransport&) = delete;

  std::string address() const override { return address_; }
  void expose(void* address, size_t size) override;
  void withdraw(void* address) override;
  void transfer(const std::string& peer_address, const std::vector<hal::TransferOp>& ops,
                Deadline deadline) override;

 private:
  struct Connection;
  struct Served {
    Socket socket;
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  void accept_loop();
  void serve(Served& served);
  // True when [address, address+bytes) lies inside one exposed range.
  bool is_exposed(uint64_t address, uint64_t bytes);
  std::shared_ptr<Connection> connection_to(const std::string& peer, Deadline deadline);
  void forget(const std::string& peer, const std::shared_ptr<Connection>& connection);

  const int device_;
  Socket listener_;
  int wake_pipe_[2] = {-1, -1};
  std::string address_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  std::mutex served_mutex_;
  std::list<Served> served_;

  std::mutex exposed_mutex_;
  base::RangeMap<> exposed_;

  std::mutex connections_mutex_;
  std::map<std::string, std::shared_ptr<Connection>> connections_;  // by peer address
};

}  // namespace memloom::cuda
