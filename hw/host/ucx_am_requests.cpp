#include "hw/host/ucx_am_requests.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "hw/host/ucx_transfer_order.h"
#include "src/base/log.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;
using Direction = hal::TransferOp::Direction;

// Descriptors per message, within what the worker's active-message header holds.
constexpr size_t kMaxOpsPerMessage = 512;
// Messages in flight to one peer per call before the oldest must be answered.
constexpr size_t kWindow = 8;
// After a failure, how long UCX gets to hand back requests on the caller's buffers.
constexpr auto kReleaseTimeout = std::chrono::seconds(2);

}  // namespace

struct UcxAmRequests::Message {
  Direction direction = Direction::kWrite;
  std::vector<msg::AmRange> ranges;
  std::vector<ucp_dt_iov_t> local;  // the caller's buffers, in the order of `ranges`
  size_t bytes = 0;
  std::string header;  // AmRequestHeader + ranges: UCX reads it until the send completes
  std::weak_ptr<Call> call;
  StagedParts staged;  // leased from send() until retired
  // Guarded by the pending table's lock.
  bool send_done = false;  // UCX no longer reads a write's payload
  bool answered = false;
  Status status = Status::kSuccess;
  std::string refusal;

  void answer(Status with, std::string why) {
    status = with;
    refusal = std::move(why);
    answered = true;
  }
};

// What a UCX callback of one message needs. It keeps the message (and its pooled buffer) while UCX
// holds the request, and counts in the call's `outstanding` and requests_held_.
struct UcxAmRequests::Ticket {
  Ticket(UcxAmRequests* owner, std::shared_ptr<Call> call, std::shared_ptr<Message> message)
      : owner(owner), call(std::move(call)), message(std::move(message)) {
    owner->requests_held_.fetch_add(1);
    this->call->started();
  }
  ~Ticket() {
    owner->requests_held_.fetch_sub(1);
    call->ended();
  }
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;

  // UCX's callbacks, or called with a null `request` where UCX ended it at once; both free the
  // ticket, a receive answers the message.
  static void sent(void* request, ucs_status_t status, void* user_data) {
    const std::unique_ptr<Ticket> ticket(static_cast<Ticket*>(user_data));
    if (request != nullptr) ucp_request_free(request);
    {
      auto lock = ticket->owner->pending_.lock();
      ticket->message->send_done = true;
    }
    if (status != UCS_OK) ticket->call->fail(status);
  }

  static void reply_received(void* request, ucs_status_t status, size_t /*length*/,
                             void* user_data) {
    const std::unique_ptr<Ticket> ticket(static_cast<Ticket*>(user_data));
    if (request != nullptr) {
      if (status != UCS_OK) ticket->call->fail(status);
      ucp_request_free(request);
    }
    auto lock = ticket->owner->pending_.lock();
    if (status == UCS_OK) {
      ticket->message->answer(Status::kSuccess, {});
    } else {
      ticket->message->answer(Status::kCommunication,
                              ucx_error("receiving a read's bytes", status));
    }
  }

  UcxAmRequests* const owner;
  std::shared_ptr<Call> call;
  std::shared_ptr<Message> message;
};

UcxAmRequests::UcxAmRequests(UcxWorker& worker, std::shared_ptr<StagingBufferPool> pool,
                             bool device_staging)
    : worker_(worker), pool_(std::move(pool)), device_staging_(device_staging) {
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  size_t header_room = 4096;
  if (ucp_worker_query(worker_.worker(), &attr) == UCS_OK) header_room = attr.max_am_header;
  const size_t fits =
      (header_room - std::min(header_room, sizeof(msg::AmRequestHeader))) / sizeof(msg::AmRange);
  max_ops_per_message_ = std::max<size_t>(1, std::min(fits, kMaxOpsPerMessage));
  msg::set_data_handler(worker_.worker(), msg::kAmReply, on_reply, this);
}

ucs_status_t UcxAmRequests::on_reply(void* arg, const void* header, size_t header_length,
                                     void* data, size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxAmRequests*>(arg);
  msg::AmReplyHeader reply{};
  if (header_length != sizeof(reply)) return UCS_OK;
  std::memcpy(&reply, header, sizeof(reply));
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  Ticket* ticket = nullptr;
  {
    // Held from finding the message to the last touch of the caller's buffers (an eager read's
    // copy) or to counting a rendezvous receive into them: a run that gives up forgets its
    // messages under this lock before it waits for what is counted, so once it returned no
    // handler writes into the caller's buffers (a late reply is dropped, not received).
    auto lock = self->pending_.lock();
    std::shared_ptr<Message> message = self->pending_.find_locked(reply.request_id, lock);
    if (message == nullptr) return UCS_OK;
    if (reply.status != 0) {
      // An unproven endpoint, or a failed staging copy, is the link's fault.
      const Status status = msg::refusal_status(reply.status, {Status::kCommunication});
      message->answer(status, rendezvous ? std::string("refused by the peer")
                                         : std::string(static_cast<const char*>(data), length));
      return UCS_OK;
    }
    const size_t expected = message->direction == Direction::kRead ? message->bytes : 0;
    if (length != expected) {
      message->answer(Status::kCommunication, "the peer answered with " + std::to_string(length) +
                                                  " bytes where " + std::to_string(expected) +
                                                  " were due");
      return UCS_OK;
    }
    if (message->direction == Direction::kWrite) {
      message->answer(Status::kSuccess, {});  // the owner answers once the bytes are in place
      return UCS_OK;
    }
    if (!rendezvous) {
      const char* from = static_cast<const char*>(data);
      for (const ucp_dt_iov_t& part : message->local) {
        std::memcpy(part.buffer, from, part.length);
        from += part.length;
      }
      message->answer(Status::kSuccess, {});
      return UCS_OK;
    }
    // The call waits for this receive (through `outstanding`) even when it gives up.
    std::shared_ptr<Call> call = message->call.lock();
    if (call == nullptr) return UCS_OK;
    ticket = new Ticket(self, std::move(call), std::move(message));
  }
  msg::receive_data(self->worker_.worker(), data, ticket->message->local, Ticket::reply_received,
                    ticket);
  return UCS_OK;
}

class UcxAmRequests::Run {
 public:
  Run(UcxAmRequests& owner, const std::shared_ptr<UcxPeer>& peer,
      const std::vector<const hal::TransferOp*>& work, Deadline deadline)
      : owner_(owner),
        peer_(peer),
        deadline_(deadline),
        order_(work),
        call_(std::make_shared<Call>(peer->in_flight())) {}

  // `op` is at most kChunkBytes when `staged` (its local memory goes through a staging buffer).
  void add(const hal::TransferOp& op, bool staged) {
    if (order_.must_wait(op)) {
      send();
      wait_for_all();
    }
    const bool joins = building_ != nullptr && building_->direction == op.direction &&
                       building_->bytes + op.bytes <= kChunkBytes &&
                       building_->ranges.size() < owner_.max_ops_per_message_;
    if (!joins) {
      if (building_ != nullptr) {
        // A packed message (about 80 us a MiB here) leaves the owner time to answer an earlier
        // rendezvous: progressing now starts that message's data before the next one is packed.
        // Without packing, the next message's header goes first: progressing here slowed a
        // 1024 x 4 KiB batch from 15.7-16.8x of one by one to 13.0-13.3x (2026-12-08).
        const bool packed = building_->local.size() > 1;
        send();
        if (packed) owner_.worker_.progress_ready();
      }
      building_ = std::make_shared<Message>();
      building_->direction = op.direction;
      building_->call = call_;
    }
    building_->ranges.push_back({op.remote_address, op.bytes});
    if (staged) {  // its iov entry gets the pooled buffer in stage(), never the device address
      building_->staged.add(building_->local.size(), static_cast<std::byte*>(op.local_address),
                            op.bytes);
    }
    ucp_dt_iov_t* last = building_->local.empty() ? nullptr : &building_->local.back();
    if (!staged && last != nullptr && last->buffer != nullptr &&
        static_cast<std::byte*>(last->buffer) + last->length == op.local_address) {
      last->length += op.bytes;  // continues the previous op's memory (never a staged part's)
    } else {
      building_->local.push_back({staged ? nullptr : op.local_address, op.bytes});
    }
    building_->bytes += op.bytes;
    order_.add(op);
  }

  void finish() {
    send();
    wait_for_all();
    for (const auto& message : sent_) {
      auto lock = owner_.pending_.lock();
      if (message->status != Status::kSuccess) raise(message->status, message->refusal);
    }
  }

  // After a timeout, an interruption or a failed endpoint (ucx_am_requests.h, "Failures").
  void abandon() {
    registrations_.clear();  // first: no reply handler starts on the caller's buffers (on_reply)
    peer_->force_close();
    if (owner_.own_buffers_) return;  // UCX holds only the pool's buffers
    if (!owner_.worker_.progress_until([this] { return call_->outstanding.load() == 0; },
                                       Deadline::after(kReleaseTimeout))) {
      MEMLOOM_LOG(kError, "transport: UCX did not release a failed transfer's requests");
    }
  }

 private:
  void send() {
    if (building_ == nullptr) return;
    std::shared_ptr<Message> message = std::move(building_);  // leaves building_ null
    if (message->local.size() > 1) message->staged.pack_host(message->local);  // "Packing" (.h)
    if (!message->staged.empty()) stage(*message);
    registrations_.push_back(owner_.pending_.add(message));
    const msg::AmRequestHeader head{registrations_.back().id(),
                                    static_cast<uint32_t>(message->ranges.size()), 0};
    message->header =
        msg::encode(head, std::string(reinterpret_cast<const char*>(message->ranges.data()),
                                      message->ranges.size() * sizeof(msg::AmRange)));
    ucp_request_param_t param{};
    param.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send = Ticket::sent;
    param.flags = UCP_AM_SEND_FLAG_REPLY;
    void* buffer = nullptr;
    size_t count = 0;
    const bool write = message->direction == Direction::kWrite;
    if (write) msg::describe_payload(message->local, param, &buffer, &count);
    auto* ticket = new Ticket(&owner_, call_, message);
    param.user_data = ticket;
    ucs_status_ptr_t request = peer_->on_ep([&](ucp_ep_h ep) {
      return ucp_am_send_nbx(ep, write ? msg::kAmWrite : msg::kAmRead, message->header.data(),
                             message->header.size(), buffer, count, &param);
    });
    sent_.push_back(std::move(message));
    if (!UCS_PTR_IS_PTR(request)) Ticket::sent(nullptr, UCS_PTR_STATUS(request), ticket);
    while (sent_.size() - oldest_ > kWindow) {
      wait([&] { return answered(oldest_); });
      retire(oldest_ + 1);
    }
  }

  void stage(Message& message) {
    message.staged.lease(*owner_.pool_, message.local);
    if (message.direction != Direction::kWrite) return;
    const std::vector<StagingCopy> copies = message.staged.copy_host_parts(/*into_buffer=*/true);
    if (!copies.empty()) owner_.pool_->staging().copy_all(copies, deadline_);
  }

  // Answered, and UCX no longer reads the message's payload: its staging buffer may go.
  bool answered(size_t index) {
    auto lock = owner_.pending_.lock();
    return sent_[index]->answered && sent_[index]->send_done;
  }

  // Ends sent_[oldest_ .. end), all answered: succeeded reads' staged bytes to the caller's
  // buffers in one copy_all, their buffers back to the pool.
  void retire(size_t end) {
    std::vector<StagingCopy> copies;
    for (size_t i = oldest_; i < end; ++i) {
      Message& message = *sent_[i];
      auto lock = owner_.pending_.lock();
      const bool succeeded = message.status == Status::kSuccess;
      lock.unlock();
      if (!succeeded || message.direction != Direction::kRead) continue;
      const std::vector<StagingCopy> out = message.staged.copy_host_parts(/*into_buffer=*/false);
      copies.insert(copies.end(), out.begin(), out.end());
    }
    if (!copies.empty()) owner_.pool_->staging().copy_all(copies, deadline_);
    for (; oldest_ < end; ++oldest_) sent_[oldest_]->staged.release();
  }

  void wait_for_all() {
    size_t seen = oldest_;
    wait([&] {
      while (seen < sent_.size() && answered(seen)) ++seen;
      return seen == sent_.size() && call_->outstanding.load() == 0;
    });
    retire(sent_.size());
    order_.restart();
  }

  // Progresses until `done`; raises on a timeout, a failed endpoint or request, an interruption.
  template <typename Done>
  void wait(Done done) {
    const bool finished = owner_.worker_.progress_until(
        [&] { return done() || peer_->failed() || call_->first_error.load() != UCS_OK; }, deadline_,
        UcxWorker::Interruptible::kYes);
    if (!finished) raise(Status::kTimeout, "transfer with " + peer_->address() + " timed out");
    if (done()) return;
    const ucs_status_t error = call_->first_error.load();
    peer_->raise_failed(error != UCS_OK ? error : peer_->failure());
  }

  UcxAmRequests& owner_;
  const std::shared_ptr<UcxPeer>& peer_;
  const Deadline deadline_;
  UcxTransferOrder order_;  // of messages unanswered or being built
  std::shared_ptr<Call> call_;
  std::shared_ptr<Message> building_;
  std::vector<std::shared_ptr<Message>> sent_;
  size_t oldest_ = 0;  // sent_[oldest_ ..] may still be unanswered
  std::vector<UcxPendingTable<Message>::Registration> registrations_;
};

void UcxAmRequests::run(const std::shared_ptr<UcxPeer>& peer,
                        const std::vector<const hal::TransferOp*>& work, Deadline deadline) {
  Run run(*this, peer, work, deadline);
  try {
    for (const hal::TransferOp* op : work) {
      // Where anything is staged, pieces of at most kChunkBytes, staged or not: the owner may stage
      // a message in one buffer.
      const size_t most = own_buffers_ || device_staging_ ? kChunkBytes : op->bytes;
      const bool staged =
          own_buffers_ || (device_staging_ && pool_->staging().needs_staging(op->local_address));
      for (size_t done = 0; done < op->bytes; done += most) {
        hal::TransferOp piece = *op;
        piece.remote_address += done;
        piece.local_address = static_cast<std::byte*>(op->local_address) + done;
        piece.bytes = std::min(most, op->bytes - done);
        run.add(piece, staged);
      }
    }
    run.finish();
  } catch (const Error& error) {
    // A refusal comes once every message was answered: nothing is left in flight.
    if (error.status() != Status::kInvalidInput && error.status() != Status::kSuccess) {
      run.abandon();
    }
    throw;
  }
}

}  // namespace memloom::host
