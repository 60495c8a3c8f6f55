// The emulated backend's Transport: a TCP endpoint per process. Serving: TcpTransportServer.
// Requesting: one cached connection per peer address, batches pipelined over it
// (tcp_transfer_pipeline.h). The endpoint binds to and advertises host_address()
// (MEMLOOM_HOST_ADDR, else 127.0.0.1).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hw/emulated/tcp_transport_server.h"
#include "hw/hal/transport.h"

namespace memloom::emulated {

class TcpTransport : public hal::Transport {
 public:
  TcpTransport() = default;
  ~TcpTransport() override = default;

  std::string address() const override { return server_.address(); }
  void expose(void* address, size_t size) override { server_.expose(address, size); }
  void withdraw(void* address) override { server_.withdraw(address); }
  // Thread-safe; transfers to one peer take turns on its connection, transfers to different
  // peers run in parallel. If a batch is refused, later ops of the call may or may not have run.
  void transfer(const std::string& peer_address, const std::vector<hal::TransferOp>& ops,
                Deadline deadline) override;

 private:
  struct Connection;
  std::shared_ptr<Connection> connection_for(const std::string& peer_address);

  TcpTransportServer server_;
  std::mutex connections_mutex_;
  std::map<std::string, std::shared_ptr<Connection>> connections_;
};

}  // namespace memloom::emulated
