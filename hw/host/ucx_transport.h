// hal::Transport on UCX, shared by both backends: one UCX worker (ucx_worker.h), a listener on the
// options' host (else MEMLOOM_HOST_ADDR, else 127.0.0.1) at any free port, the job proof on each
// new endpoint (ucx_job_gate.h), both data paths for its transfers and its peers'. UCX picks the
// wire from what it finds and the user's UCX_* variables.
//
// Data paths, chosen by the requester (MEMLOOM_UCX_DATA_PATH):
//   rma  ucp_put_nbx/ucp_get_nbx with remote keys: one-sided, the NIC moves the bytes where UCX
//        has an RDMA transport. Without one UCX emulates RMA in software: its handlers check no
//        remote key, and UCX 1.13 aborts the serving process when a peer's links are cut mid-put.
//   am   active messages that memloom serves itself (ucx_am_requests.h, ucx_am_server.h): every
//        range checked against the exposed regions, the copy done by the owner.
//   auto (the default) rma where UCX offers an RDMA transport (ucx_capabilities.h), else am.
// Every transport serves am; rma only where UCX has an RDMA transport or rma was asked for; an rma
// requester moves to am for a peer that refuses remote keys. Device memory that a transport stages
// (its UCX has no CUDA support) moves on am only.
//
// Addresses are "ucx://IP:PORT" ("ucx://[IPv6]:PORT"). Thread-safe: transfers to one peer or to
// several run in parallel on the shared worker.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_am_requests.h"
#include "hw/host/ucx_am_server.h"

namespace memloom::host {

enum class UcxDataPath { kRma, kAm };

// The path MEMLOOM_UCX_DATA_PATH picks here (kInvalidInput for a value that names none).
UcxDataPath chosen_ucx_data_path();

inline const char* ucx_data_path_name(UcxDataPath path) {
  return path == UcxDataPath::kAm ? "am" : "rma";
}

class UcxTransport : public hal::Transport {
 public:
  // `staging`: null where UCX moves device memory itself (ucx_supports_cuda_memory); else memory it
  // says needs staging never reaches UCX.
  explicit UcxTransport(const hal::TransportOptions& options = {},
                        std::unique_ptr<BufferStaging> staging = nullptr);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string address() const override { return address_; }
  void expose(void* address, size_t size) override { regions_.expose(address, size); }
  void withdraw(void* address) override { regions_.withdraw(address); }
  void transfer(const std::string& peer_address, const std::vector<hal::TransferOp>& ops,
                Deadline deadline) override;

 private:
  void run(const std::shared_ptr<UcxPeer>& peer, const std::vector<const hal::TransferOp*>& work,
           Deadline deadline);

  // Hands a control message to `(this->*object).*take`.
  template <auto object, auto take>
  static void dispatch(void* self, const void* data, size_t length, ucp_ep_h reply_ep) {
    ((static_cast<UcxTransport*>(self)->*object).*take)(data, length, reply_ep);
  }

  // Declared before the worker: UCX requests in flight when it is destroyed hold pooled buffers.
  const bool stages_device_memory_;  // a staging was given; else staging_ is HostMemoryStaging
  const std::unique_ptr<BufferStaging> staging_;
  const std::shared_ptr<StagingBufferPool> pool_;  // also "Own buffers" (ucx_am_requests.h)
  const UcxDataPath data_path_;  // before UCX starts: a bad MEMLOOM_UCX_DATA_PATH fails at once
  const bool serves_rma_;  // UCX has an RDMA transport or rma was asked for; else no RMA at all
  // The IP literal it listens on; before the worker, whose configuration an IPv6 one changes.
  const std::string host_;
  // Declared before the worker: UCX may call the handlers until the worker is destroyed.
  std::array<ucx_messages::Registration, 8> handlers_{};
  UcxWorker worker_;
  UcxJobGate gate_;
  UcxRegionRegistry regions_;
  UcxAmServer am_server_;
  UcxAmRequests am_requests_;
  UcxEndpoints endpoints_;
  std::string address_;
  std::mutex am_only_mutex_;
  std::set<std::string> am_only_peers_;  // peers that serve no remote keys: reached over am
};

}  // namespace memloom::host
