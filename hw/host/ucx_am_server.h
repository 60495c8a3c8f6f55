// The owner's side of the UCX transport's active-message data path (kAmWrite, kAmRead in
// ucx_messages.h): memloom, not UCX's software RMA, moves the bytes, after checking that every
// range of a request lies inside one exposed region (ucx_region_registry.h) and that the request
// came over an endpoint that proved the job secret (ucx_job_gate.h). Anything else is refused with
// a kAmReply carrying a status and a message, and no byte moves.
//
// Writes: eager data is copied in place inside the handler; rendezvous data is received by
// ucp_am_recv_data_nbx straight into the region (an IOV receive when the request has several
// ranges). Reads: the reply carries the region's bytes as an IOV send. The reply to a write goes
// once its data is in place, so the requester's completion means the bytes landed.
//
// Device memory (a transport given a BufferStaging, ucx_transport.h): a range the CPU cannot touch
// is never handed to UCX nor touched here; it goes through a host buffer of the staging pool, by
// the staging's copies: an eager write's bytes are copied from UCX's buffer to the range, a
// rendezvous write is received into the host buffer and copied on, a read's ranges are copied into
// the host buffer before the reply is sent from it. memloom's requesters with staging send at most
// UcxAmRequests::kChunkBytes a message, so one pooled buffer serves it; a larger message (from a
// requester without staging) gets a host buffer of its own size, freed with the request.
//
// Every copy holds its regions (UcxRegionRegistry::hold) until it ends, so withdraw() does not
// unmap memory a copy is still using, and a request that arrives after withdraw() is refused.
//
// Served always, whatever data path this process's own transfers use: the requester chooses.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <string>

#include "hw/host/staging_buffer_pool.h"
#include "hw/host/ucx_job_gate.h"
#include "hw/host/ucx_region_registry.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"

namespace memloom::host {

class UcxAmServer {
 public:
  // `staging`: null where every exposed region is host memory.
  UcxAmServer(UcxWorker& worker, UcxRegionRegistry& regions, UcxJobGate& gate,
              std::shared_ptr<StagingBufferPool> staging)
      : worker_(worker), regions_(regions), gate_(gate), staging_(std::move(staging)) {}
  UcxAmServer(const UcxAmServer&) = delete;
  UcxAmServer& operator=(const UcxAmServer&) = delete;

  // Registers the handlers on the worker (this object must outlive it).
  void register_handlers();
  // The owner's address, named in refusals (set once the listener is up).
  void set_own_address(const std::string& address) { own_address_ = address; }

  // Requests being served that UCX has not handed back (a reply's send, a write's receive):
  // the transport leaves its worker open at destruction while there are any (UcxAmRequests::
  // requests_held says why).
  size_t requests_held() const { return requests_held_.load(); }

  // One request being served (defined in the .cpp; public for its UCX callbacks there).
  struct Request;

 private:
  static ucs_status_t on_write(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_read(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);
  // Parses and checks a request of `payload_bytes` (SIZE_MAX: a read); false when it was refused
  // (the refusal is sent, `request` is gone) or dropped.
  bool accept(std::unique_ptr<Request>& request, const void* header, size_t header_length,
              size_t payload_bytes, const ucp_am_recv_param_t* param);
  // Points the request's device ranges into a host buffer of the pool, and copies a read's bytes
  // there; false when that failed (the failure is sent, `request` is gone).
  bool stage(std::unique_ptr<Request>& request, bool read);

  UcxWorker& worker_;
  UcxRegionRegistry& regions_;
  UcxJobGate& gate_;
  const std::shared_ptr<StagingBufferPool> staging_;
  std::string own_address_;
  std::atomic<size_t> requests_held_{0};
};

}  // namespace memloom::host
