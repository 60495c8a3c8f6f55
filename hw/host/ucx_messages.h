// The active messages UCX transports exchange besides the data itself: remote keys on request, and
// their revocation when memory is withdrawn. Data moves by ucp_put_nbx/ucp_get_nbx only.
//
//   kRegionRequest  requester -> owner   "which exposed region holds [address, +bytes)?"
//   kRegionReply    owner -> requester   that region's base, size and packed rkey, or a refusal
//   kRevoke         owner -> holders     "region at base is withdrawn: drop its rkey"
//   kRevokeAck      holder -> owner      done; the owner unmaps once every holder answered
//   kHello .. kVerdict                   the job proof before the first request (ucx_job_gate.h)
//
// Every message is one little-endian struct, then (replies, revocations) variable bytes. Messages
// go eagerly (UCP_AM_SEND_FLAG_EAGER), so handlers always get their bytes in place.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace memloom::host::ucx_messages {

enum Id : unsigned {
  kRegionRequest = 0x4d4c01,
  kRegionReply,
  kRevoke,
  kRevokeAck,
  kHello,
  kChallenge,
  kProof,
  kVerdict
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

struct RevokeHeader {
  uint64_t revoke_id;
  uint64_t base;
  // The owner's transport address follows: the holder finds its cache by it.
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

// The bytes of `header` followed by `tail`.
template <typename Header>
std::string encode(const Header& header, const std::string& tail = {}) {
  std::string bytes(sizeof(Header) + tail.size(), '\0');
  std::memcpy(bytes.data(), &header, sizeof(Header));
  std::memcpy(bytes.data() + sizeof(Header), tail.data(), tail.size());
  return bytes;
}

// The header of a received message and what follows it; nothing when it is too short.
template <typename Header>
std::optional<Header> decode(const void* data, size_t length, std::string* tail = nullptr) {
  if (data == nullptr || length < sizeof(Header)) return std::nullopt;
  Header header;
  std::memcpy(&header, data, sizeof(Header));
  if (tail != nullptr)
    tail->assign(static_cast<const char*>(data) + sizeof(Header), length - sizeof(Header));
  return header;
}

// Sends `bytes` as message `id` on `ep` and forgets it: the copy is freed when UCX is done with it.
// `reply` asks UCX to give the receiver an endpoint back to us (UCP_AM_SEND_FLAG_REPLY). A send
// that fails shows up as the endpoint's error (its error callback), so nothing is returned.
void send(ucp_ep_h ep, unsigned id, std::string bytes, bool reply);

// A handler of received messages: handler(arg, data, length, reply_ep), run under the worker's
// lock by whichever thread progresses it.
using Handler = void (*)(void* arg, const void* data, size_t length, ucp_ep_h reply_ep);
struct Registration {
  Handler handler;
  void* arg;
};
// Registers `registration` (which must outlive the worker) for message `id` on `worker`.
void set_handler(ucp_worker_h worker, unsigned id, const Registration* registration);

}  // namespace memloom::host::ucx_messages
