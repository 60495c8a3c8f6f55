// The requester's side of the UCX transport's active-message data path (ucx_messages.h,
// ucx_am_server.h): one transfer() call's ops to one proven peer, sent as kAmWrite / kAmRead
// messages, each answered by a kAmReply.
//
// Chunks: consecutive ops of one direction share a message up to kChunkBytes of payload (and as
// many descriptors as an active-message header holds); an op larger than that is a message of its
// own (a 64 MiB write is one rendezvous), except with staging (below). Writes send the caller's
// buffers as an IOV (no copy on this side); a read's reply is copied (eager) or received
// (rendezvous, IOV) into the caller's buffers. Several messages are in flight at once.
//
// Staging (a transport given a BufferStaging, ucx_transport.h): a local buffer the CPU cannot touch
// (device memory UCX cannot register) never reaches UCX. Ops are cut into pieces of at most
// kChunkBytes, so no message needs a larger host buffer on either side; a message's staged pieces
// go through one host buffer of the pool: a write's are copied in (one copy_all) just before it is
// sent, while earlier messages are in flight; a read's are copied out once it is answered, the
// answered messages of one wait together (one copy_all).
//
// Order: the owner serves messages in the order they arrive, but a rendezvous write's bytes land
// later than its header, so an op that overlaps an op still unanswered (in remote or in local
// memory) first waits for every message in flight, as ucx_transfer_batch.h does with flushes.
//
// Own buffers (StagedBuffers::kAll): where endpoints go without peer error handling (UCX_TLS=sm,
// self), UCX 1.13 may never hand back the requests of a call that gave up on a stopped or dead
// peer, even once the endpoint is closed by force. Every op then goes through the pool as staged
// ops do, so UCX only ever holds buffers of the pool, and a message's buffer stays leased until UCX
// hands its request back: the caller's buffers are free the moment the call returns, however it
// ended. It costs one copy of each byte on this side.
//
// Failures: a refusal is raised with the owner's status and message (kInvalidInput for a range it
// does not expose; messages sent before it may have been applied). A timeout, an interruption or
// a failed endpoint forgets the call's messages (no reply handler touches the caller's buffers
// after that, on_reply), lets a live peer's requests under way end (at most 2 s, and only while
// they keep ending: UcxWorker::progress_while_ending), closes the endpoint by force and, where UCX
// holds caller's buffers (not kAll), waits (bounded) until UCX let go of them, before raising
// kTimeout, kInterrupted or kCommunication naming the peer.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/staging_buffer_pool.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_pending_table.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"

namespace memloom::host {

class UcxAmRequests {
 public:
  // Payload per message: large enough that a message's fixed costs (a header, a reply, a round of
  // the owner's handler) vanish against its bytes, small enough that several are in flight at
  // once. Also the size of the staging pool's buffers.
  static constexpr size_t kChunkBytes = size_t{1} << 20;

  // Which local buffers go through the pool rather than to UCX.
  enum class StagedBuffers {
    kNone,          // none: every buffer is host memory UCX may hold (`pool` may be null)
    kDeviceMemory,  // those the pool's staging says need it (device memory)
    kAll,           // every one ("Own buffers" above)
  };

  UcxAmRequests(UcxWorker& worker, std::shared_ptr<StagingBufferPool> pool, StagedBuffers staged);
  UcxAmRequests(const UcxAmRequests&) = delete;
  UcxAmRequests& operator=(const UcxAmRequests&) = delete;

  // Registers the reply handler on the worker (this object must outlive it).
  void register_handler();

  // Runs `work` (ops of at least one byte) against `peer`, which proved the job secret.
  void run(const std::shared_ptr<UcxPeer>& peer, const std::vector<const hal::TransferOp*>& work,
           Deadline deadline);

  // UCX requests of this requester not yet handed back (sends and reply receives, of calls that
  // ended too): the transport leaves its worker open at destruction while there are any, since
  // UCX 1.13 aborts the process when a worker is destroyed with a request still queued.
  size_t requests_held() const { return requests_held_.load(); }

  // One message in flight and what a UCX callback of it needs (defined in the .cpp; public for its
  // UCX callbacks there).
  struct Message;
  struct Ticket;

 private:
  class Run;
  using Call = UcxRequestCount;  // sends and reply receives of one run() UCX has not completed
  static void sent(void* request, ucs_status_t status, void* user_data);
  // Ends a message's send, by UCX's callback or at once.
  static void send_ended(Ticket* ticket, ucs_status_t status);
  static void reply_received(void* request, ucs_status_t status, size_t length, void* user_data);
  // Ends a read's rendezvous receive, by UCX's callback or at once: answers its message by
  // `status` and lets go of the ticket (and of the call's count of it).
  static void receive_ended(Ticket* ticket, ucs_status_t status);
  static ucs_status_t on_reply(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);

  UcxWorker& worker_;
  const std::shared_ptr<StagingBufferPool> pool_;
  const StagedBuffers staged_;
  size_t max_ops_per_message_;
  std::atomic<size_t> requests_held_{0};
  UcxPendingTable<Message> pending_;  // its lock guards the messages' answers
};

}  // namespace memloom::host
