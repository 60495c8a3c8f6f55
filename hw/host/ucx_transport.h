// hal::Transport on UCX, shared by both backends: one UCX context and worker per transport, a
// listener on the options' host, else host_address() (MEMLOOM_HOST_ADDR, else 127.0.0.1), at any
// free port, the job proof on each new endpoint (ucx_job_gate.h), remote keys exchanged on demand
// with proven endpoints only (ucx_remote_keys.h, ucx_region_registry.h). This process's transfers
// move data one of two ways (ucx_data_path.h, MEMLOOM_UCX_DATA_PATH): one-sided by
// ucp_put_nbx/ucp_get_nbx (ucx_transfer_batch.h), or in active messages memloom serves itself
// (ucx_am_requests.h, ucx_am_server.h); it serves peers' requests of both kinds. UCX picks the wire
// (RDMA, shared memory, TCP) from what it finds and from the user's UCX_* variables, which memloom
// leaves alone.
//
// Addresses are "ucx://IP:PORT" ("ucx://[IPv6]:PORT"); only this file reads them.
//
// Thread-safe: transfers to one peer or to several run in parallel on the shared worker.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/buffer_staging.h"
#include "hw/host/staging_buffer_pool.h"
#include "hw/host/ucx_am_requests.h"
#include "hw/host/ucx_am_server.h"
#include "hw/host/ucx_data_path.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_job_gate.h"
#include "hw/host/ucx_messages.h"
#include "hw/host/ucx_region_registry.h"
#include "hw/host/ucx_remote_keys.h"
#include "hw/host/ucx_worker.h"

namespace memloom::host {

class UcxTransport : public hal::Transport {
 public:
  // Device memory (on either side) is served one of two ways. With a UCX that has CUDA support
  // (ucx_supports_cuda_memory()) UCX registers and moves it itself (GPUDirect RDMA): `staging` is
  // null. Without it the backend passes `staging`, and memory it says needs staging never reaches
  // UCX: it moves on the am path only (ucx_am_requests.h, ucx_am_server.h), pipelined through
  // host buffers of a pool, on the requesting and the serving side alike; exposed, it is not
  // registered, and a request for its remote key is refused (ucx_region_registry.h), so rma
  // requesters move to am for this owner.
  explicit UcxTransport(const hal::TransportOptions& options = {},
                        std::unique_ptr<BufferStaging> staging = nullptr);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string address() const override { return address_; }
  void expose(void* address, size_t size) override;
  void withdraw(void* address) override;
  void transfer(const std::string& peer_address, const std::vector<hal::TransferOp>& ops,
                Deadline deadline) override;

 private:
  void run(const std::shared_ptr<UcxPeer>& peer, const std::vector<const hal::TransferOp*>& work,
           Deadline deadline);
  // Whether `work` goes on the am path whatever the data path says.
  bool needs_am(const UcxPeer& peer, const std::vector<const hal::TransferOp*>& work);

  // The control-message handler (ucx_messages.h) that hands a message to `(this->*object).*take`.
  template <auto object, auto take>
  static void dispatch(void* self, const void* data, size_t length, ucp_ep_h reply_ep) {
    ((static_cast<UcxTransport*>(self)->*object).*take)(data, length, reply_ep);
  }

  // Declared before the worker: UCX requests still in flight when it is destroyed hold buffers of
  // the pools (null: all memory is host memory).
  const std::unique_ptr<BufferStaging> staging_;
  // Where endpoints go without peer error handling, this side's buffers all go through a pool
  // (ucx_am_requests.h, "Own buffers"): staging_'s where there is one (it copies host memory too),
  // else one of plain host buffers (host_staging_'s). Created either way; its buffers only when
  // used.
  const std::unique_ptr<BufferStaging> host_staging_;
  const std::shared_ptr<StagingBufferPool> staging_pool_, requester_pool_;
  // Before UCX starts: a bad MEMLOOM_UCX_DATA_PATH fails the constructor at once.
  const UcxDataPath data_path_;
  // Whether this transport serves rma requesters: only where UCX has an RDMA transport (or rma was
  // asked for). Elsewhere its context has no RMA at all (UcxWorker), so UCX's software RMA, which
  // checks no remote key, is not there for a process speaking UCP directly.
  const bool serves_rma_;
  // The IP literal it listens on and advertises (before the worker: an IPv6 one changes the
  // worker's UCX configuration).
  const std::string host_;
  // Declared before the worker: UCX may call the handlers until the worker is destroyed.
  std::array<ucx_messages::Registration, 8> handlers_{};
  UcxWorker worker_;
  UcxJobGate gate_;
  UcxRegionRegistry regions_;
  UcxAmServer am_server_;
  UcxAmRequests am_requests_;
  UcxEndpoints endpoints_;
  UcxRemoteKeys remote_keys_;
  std::string address_;
  // Peers that serve no remote keys (their UCX has no RDMA transport): reached over am.
  std::mutex am_only_mutex_;
  std::set<std::string> am_only_peers_;
};

}  // namespace memloom::host
