#include "hw/host/ucx_remote_keys.h"

#include "hw/host/ucx_messages.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;

}  // namespace

std::shared_ptr<UcxRemoteKey> UcxRemoteKeys::key_for(const std::shared_ptr<UcxPeer>& peer,
                                                     uint64_t address, uint64_t bytes,
                                                     Deadline deadline) {
  if (auto key = peer->key_for(address, bytes)) return key;
  auto pending = std::make_shared<Pending>();
  pending->peer = peer;
  const auto registration = pending_.add(pending);
  const uint64_t id = registration.id();
  msg::send(peer->ep(), msg::kRegionRequest, msg::encode(msg::RegionRequest{id, address, bytes}),
            /*reply=*/true);
  auto answered = [&] {
    auto lock = pending_.lock();
    return pending->answered || peer->failed();
  };
  if (!worker_.progress_until(answered, deadline, UcxWorker::Interruptible::kYes)) {
    raise(Status::kTimeout,
          "timed out asking " + peer->address() + " for the remote key of " + base::hex(address));
  }
  auto lock = pending_.lock();
  if (!pending->answered) peer->raise_failed(peer->failure());
  if (pending->status != Status::kSuccess) raise(pending->status, pending->message);
  const UcxRemoteKey& key = *pending->key;
  if (address < key.base || address - key.base + bytes > key.size) {
    raise(Status::kCommunication,
          peer->address() + " answered with a region that does not hold " + base::hex(address));
  }
  return pending->key;
}

void UcxRemoteKeys::take_reply(const void* data, size_t length, ucp_ep_h) {
  std::string tail;
  auto reply = msg::decode<msg::RegionReplyHeader>(data, length, &tail);
  if (!reply) return;
  std::shared_ptr<Pending> pending = pending_.find(reply->request_id);
  if (!pending) return;  // the requester timed out meanwhile
  Status status = Status::kSuccess;
  std::string message;
  std::shared_ptr<UcxRemoteKey> key;
  if (reply->status != 0) {
    // A refused range is the caller's error, a peer that serves no remote keys says so
    // (kNotSupported: the requester moves to the am path), anything else (an unproven endpoint)
    // is the link's.
    if (reply->status == static_cast<uint32_t>(Status::kCommunication)) {
      status = Status::kCommunication;
    } else if (reply->status == static_cast<uint32_t>(Status::kNotSupported)) {
      status = Status::kNotSupported;
    } else {
      status = Status::kInvalidInput;
    }
    message = std::move(tail);
  } else {
    ucp_rkey_h unpacked = nullptr;
    ucs_status_t unpack = ucp_ep_rkey_unpack(pending->peer->ep(), tail.data(), &unpacked);
    if (unpack == UCS_OK) {
      key = std::make_shared<UcxRemoteKey>(unpacked, reply->base, reply->size);
      pending->peer->cache_key(key);
    } else {
      status = Status::kCommunication;
      message = ucx_error("the remote key from " + pending->peer->address(), unpack);
    }
  }
  auto lock = pending_.lock();
  pending->status = status;
  pending->message = std::move(message);
  pending->key = std::move(key);
  pending->answered = true;
}

void UcxRemoteKeys::take_revoke(const void* data, size_t length, ucp_ep_h reply_ep) {
  std::string owner;
  auto revoke = msg::decode<msg::RevokeHeader>(data, length, &owner);
  if (!revoke) return;
  if (auto peer = endpoints_.cached(owner)) peer->drop_key(revoke->base);
  if (reply_ep != nullptr) {
    msg::send(reply_ep, msg::kRevokeAck, msg::encode(msg::RevokeAck{revoke->revoke_id}),
              /*reply=*/false);
  }
}

}  // namespace memloom::host
