// The active messages UCX transports exchange, and the requests that wait for a reply.
//
//   kRegionRequest  requester -> owner   "which exposed region holds [address, +bytes)?"
//   kRegionReply    owner -> requester   that region's base, size and packed rkey, or a refusal
//   kRevoke         owner -> holders     "region at base is withdrawn: drop its rkey"
//   kRevokeAck      holder -> owner      done; the owner unmaps once every holder answered
//   kHello .. kVerdict                   the job proof before the first request (ucx_job_gate.h)
//   kAmWrite        requester -> owner   header: AmRequestHeader + op_count AmRange; data: the
//                                        ranges' bytes back to back (eager or rendezvous)
//   kAmRead         requester -> owner   header: AmRequestHeader + op_count AmRange; no data
//   kAmReply        owner -> requester   header: AmReplyHeader; data: a refusal's message, or
//                                        (reads) the ranges' bytes back to back
//
// A control message is one little-endian struct, then (replies, revocations) variable bytes, all in
// the data, sent eagerly so handlers get their bytes in place. The data path's messages carry their
// descriptors in the am header: the owner knows where rendezvous data goes before it arrives.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memloom/error.h"

namespace memloom::host::ucx_messages {

enum Id : unsigned {
  kRegionRequest = 0x4d4c01,
  kRegionReply,
  kRevoke,
  kRevokeAck,
  kHello,
  kChallenge,
  kProof,
  kVerdict,
  kAmWrite,
  kAmRead,
  kAmReply
};

struct RegionRequest {
  uint64_t request_id;
  uint64_t address;
  uint64_t bytes;
};

struct RegionReplyHeader {
  uint64_t request_id;
  uint32_t status;  // 0: found, then the packed rkey follows; else a memloom::Status and a message
  uint32_t reserved;
  uint64_t base;
  uint64_t size;
};

struct RevokeHeader {  // the owner's transport address follows: the holder finds its cache by it
  uint64_t revoke_id;
  uint64_t base;
};

struct RevokeAck {
  uint64_t revoke_id;
};

struct Hello {
  uint64_t hello_id;
  uint8_t nonce[32];
};

struct Challenge {
  uint64_t hello_id;
  uint8_t nonce[32];
  uint8_t proof[32];
};

struct HelloProof {
  uint64_t hello_id;
  uint8_t proof[32];
};

struct Verdict {
  uint64_t hello_id;
  uint32_t status;  // 0: admitted, else a memloom::Status
  uint32_t reserved;
};

struct AmRequestHeader {  // `op_count` AmRange follow it in the header
  uint64_t request_id;
  uint32_t op_count;
  uint32_t reserved;
};

struct AmRange {
  uint64_t address;
  uint64_t bytes;
};

struct AmReplyHeader {
  uint64_t request_id;
  uint32_t status;  // 0: done (reads: the bytes follow); else a Status, the message follows
  uint32_t reserved;
};

// The bytes of `header` followed by `tail`.
template <typename Header>
std::string encode(const Header& header, const std::string& tail = {}) {
  std::string bytes(sizeof(Header) + tail.size(), '\0');
  std::memcpy(bytes.data(), &header, sizeof(Header));
  std::memcpy(bytes.data() + sizeof(Header), tail.data(), tail.size());
  return bytes;
}

// The header of a received message and what follows it; nothing when too short.
template <typename Header>
std::optional<Header> decode(const void* data, size_t length, std::string* tail = nullptr) {
  if (data == nullptr || length < sizeof(Header)) return std::nullopt;
  Header header;
  std::memcpy(&header, data, sizeof(Header));
  if (tail != nullptr)
    tail->assign(static_cast<const char*>(data) + sizeof(Header), length - sizeof(Header));
  return header;
}

// The Status a refusal's wire status (not 0) names, if it is one of `known`; anything else reads as
// kInvalidInput, a range the owner refused.
inline Status refusal_status(uint32_t wire, std::initializer_list<Status> known) {
  for (Status status : known) {
    if (wire == static_cast<uint32_t>(status)) return status;
  }
  return Status::kInvalidInput;
}

// Joins entries that continue one another (a packed buffer's parts, neighbouring ops).
inline void merge_adjacent(std::vector<ucp_dt_iov_t>& parts) {
  size_t kept = 0;
  for (size_t i = 1; i < parts.size(); ++i) {
    ucp_dt_iov_t& last = parts[kept];
    if (static_cast<char*>(last.buffer) + last.length == parts[i].buffer) {
      last.length += parts[i].length;
    } else {
      parts[++kept] = parts[i];
    }
  }
  if (!parts.empty()) parts.resize(kept + 1);
}

// `parts` as ucp_am_send_nbx / ucp_am_recv_data_nbx take it: one contiguous buffer, or an IOV (the
// datatype goes into `param`), adjacent parts merged in place.
inline void describe_payload(std::vector<ucp_dt_iov_t>& parts, ucp_request_param_t& param,
                             void** buffer, size_t* count) {
  merge_adjacent(parts);
  if (parts.size() == 1) {
    *buffer = parts[0].buffer;
    *count = parts[0].length;
    return;
  }
  param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  param.datatype = ucp_dt_make_iov();
  *buffer = parts.data();
  *count = parts.size();
}

// Receives a rendezvous message's data (`descriptor`) into `parts` (as describe_payload): UCX calls
// `received` with `user_data`, or this does, with a null request, where the receive ended at once.
inline void receive_data(ucp_worker_h worker, void* descriptor, std::vector<ucp_dt_iov_t>& parts,
                         ucp_am_recv_data_nbx_callback_t received, void* user_data) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = received;
  param.user_data = user_data;
  void* buffer = nullptr;
  size_t count = 0;
  describe_payload(parts, param, &buffer, &count);
  ucs_status_ptr_t request = ucp_am_recv_data_nbx(worker, descriptor, buffer, count, &param);
  if (!UCS_PTR_IS_PTR(request)) received(nullptr, UCS_PTR_STATUS(request), 0, user_data);
}

// Sends and forgets (a failed send shows up as the endpoint's error). `reply`: the receiver gets an
// endpoint back to us (UCP_AM_SEND_FLAG_REPLY).
void send(ucp_ep_h ep, unsigned id, std::string bytes, bool reply);

// A handler of received messages, run under the worker's lock by whichever thread progresses it.
using Handler = void (*)(void* arg, const void* data, size_t length, ucp_ep_h reply_ep);
struct Registration {
  Handler handler;
  void* arg;
};
// `registration` must outlive the worker.
void set_handler(ucp_worker_h worker, unsigned id, const Registration* registration);
// UCX's own kind of handler (header, data or a rendezvous descriptor), for the data path's
// messages; `arg` must outlive the worker.
void set_data_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t handler, void* arg);

}  // namespace memloom::host::ucx_messages

namespace memloom::host {

// Requests waiting for their reply, by id (job proofs, remote-key requests, am transfers). The
// waiter's Registration forgets its entry when it stops waiting, whatever the outcome; a reply
// handler finds the entry by the reply's id, or none when its waiter gave up. Entries are shared,
// so a handler may work on one outside the table's lock; their fields are guarded by lock().
template <typename Entry>
class UcxPendingTable {
 public:
  class Registration {
   public:
    Registration(UcxPendingTable& table, uint64_t id) : table_(&table), id_(id) {}
    ~Registration() {
      if (table_ != nullptr) table_->forget(id_);
    }
    Registration(Registration&& other) noexcept  // (no copies, no assignment)
        : table_(std::exchange(other.table_, nullptr)), id_(other.id_) {}
    uint64_t id() const { return id_; }

   private:
    UcxPendingTable* table_;
    uint64_t id_;
  };

  Registration add(std::shared_ptr<Entry> entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = next_id_++;
    entries_.emplace(id, std::move(entry));
    return Registration(*this, id);
  }

  // The entry of `id`, or null when its waiter forgot it.
  std::shared_ptr<Entry> find(uint64_t id) {
    auto held = lock();
    return find_locked(id, held);
  }
  // The same under lock() (`held`), kept while the caller works on the entry: none is forgotten.
  std::shared_ptr<Entry> find_locked(uint64_t id, const std::unique_lock<std::mutex>& /*held*/) {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second;
  }

  void forget(uint64_t id) {
    typename decltype(entries_)::node_type dropped;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = entries_.extract(id);
  }

  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<Entry>> entries_;
  uint64_t next_id_ = 1;
};

}  // namespace memloom::host
