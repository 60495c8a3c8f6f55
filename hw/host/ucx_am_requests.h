// The requester's side of the UCX transport's am data path (ucx_am_server.h serves it): one
// transfer() call's ops to one proven peer as kAmWrite / kAmRead messages, several in flight, each
// answered by a kAmReply.
//
// Chunks: consecutive ops of one direction share a message up to kChunkBytes of payload (and as
// many descriptors as an am header holds); a larger op is a message of its own (a 64 MiB write is
// one rendezvous) unless staged. Writes send the caller's buffers; replies land in them.
//
// Staging (device memory): ops are cut into pieces of at most kChunkBytes, so one pooled host
// buffer serves a message on either side. A write's staged pieces are copied in just before it is
// sent; a read's once answered, the messages answered by one wait in one copy_all.
//
// Packing: a message of several parts goes to UCX as one pooled buffer, its host parts copied by
// memcpy beside the staged ones; the owner does the same. UCX 1.13 moves a list of buffers by
// rendezvous through copies of its own on both sides, at about half the rate of one buffer.
//
// Order: the owner serves messages in arrival order, but a rendezvous write's bytes land after its
// header, so an op that must wait (ucx_transfer_order.h) waits for every message in flight.
//
// Own buffers: where endpoints go without peer error handling (UCX_TLS=sm, self), UCX 1.13 may
// never hand back the requests of a call that gave up on a stopped or dead peer, even once the
// endpoint is closed by force. Every op then goes through the pool, its buffer leased until UCX
// hands the request back: the caller's buffers are free when the call returns, however it ended,
// for one copy of each byte.
//
// Failures: a refusal raises the owner's status and message (messages sent before it may have been
// applied). A timeout, an interruption or a failed endpoint forgets the call's messages (no reply
// handler touches the caller's buffers after that), lets a live peer's requests under way end,
// closes the endpoint by force and, without own buffers, waits (bounded) until UCX let go of them.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/buffer_staging.h"
#include "hw/host/ucx_endpoints.h"

namespace memloom::host {

class UcxAmRequests {
 public:
  // Payload per message (and the pool's buffer size): large enough that a message's fixed costs
  // (header, reply, a round of the owner's handler) vanish, small enough for several in flight.
  static constexpr size_t kChunkBytes = size_t{1} << 20;

  // Registers the reply handler on `worker`. `device_staging`: the pool's staging moves device
  // memory (else all memory is host memory).
  UcxAmRequests(UcxWorker& worker, std::shared_ptr<StagingBufferPool> pool, bool device_staging);
  UcxAmRequests(const UcxAmRequests&) = delete;
  UcxAmRequests& operator=(const UcxAmRequests&) = delete;

  // Runs `work` (ops of at least one byte) against `peer`, which proved the job secret.
  void run(const std::shared_ptr<UcxPeer>& peer, const std::vector<const hal::TransferOp*>& work,
           Deadline deadline);

  // UCX requests not yet handed back, of ended calls too (UcxWorker::keep_open_at_destruction).
  size_t requests_held() const { return requests_held_.load(); }

 private:
  struct Message;
  struct Ticket;
  class Run;
  using Call = UcxRequestCount;  // sends and reply receives of one run() UCX has not completed
  static ucs_status_t on_reply(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);

  UcxWorker& worker_;
  const std::shared_ptr<StagingBufferPool> pool_;
  const bool device_staging_;
  const bool own_buffers_ = worker_.error_mode() == UCP_ERR_HANDLING_MODE_NONE;  // "Own buffers"
  size_t max_ops_per_message_;
  std::atomic<size_t> requests_held_{0};
  UcxPendingTable<Message> pending_;  // its lock guards the messages' answers
};

}  // namespace memloom::host
