// The TCP Transport of both backends (the default; MEMLOOM_TRANSPORT=ucx picks UCX): a TCP
// endpoint per process. Serving: TcpTransportServer. Requesting: up to kConnectionsPerPeer cached
// connections per peer address, one per transfer() in progress, batches pipelined over each
// (tcp_transfer_pipeline.h), opened with the job proof (tcp_wire.h). The endpoint binds to and
// advertises the options' host, else host_address() (MEMLOOM_HOST_ADDR, else 127.0.0.1). Memory the
// CPU cannot touch (the CUDA backend's device memory) is staged through host buffers by the
// BufferStaging the backend passes, on the requesting and the serving side alike; the emulated
// backend passes none.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "hw/hal/transport.h"
#include "hw/host/tcp_transport_server.h"

namespace memloom::host {

class TcpTransport : public hal::Transport {
 public:
  explicit TcpTransport(const hal::TransportOptions& options = {},
                        std::unique_ptr<BufferStaging> staging = nullptr)
      : secret_(options.job_secret),
        staging_(std::move(staging)),
        server_(staging_.get(), options) {}
  ~TcpTransport() override = default;

  std::string address() const override { return server_.address(); }
  void expose(void* address, size_t size) override { server_.expose(address, size); }
  void withdraw(void* address) override { server_.withdraw(address); }
  // Thread-safe; transfers run in parallel, to one peer too (on connections of their own, up to
  // kConnectionsPerPeer; more wait for one to be free). If a batch is refused, later ops of the
  // call may or may not have run.
  void transfer(const std::string& peer_address, const std::vector<hal::TransferOp>& ops,
                Deadline deadline) override;

 private:
  struct Connection;
  struct Peer;
  std::shared_ptr<Peer> peer_for(const std::string& peer_address);

  const hal::JobSecret secret_;
  const std::unique_ptr<BufferStaging> staging_;  // null: all memory is host memory
  TcpTransportServer server_;
  std::mutex peers_mutex_;
  std::map<std::string, std::shared_ptr<Peer>> peers_;
};

}  // namespace memloom::host
