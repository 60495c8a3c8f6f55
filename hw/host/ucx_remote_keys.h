// The requester's side of the remote-key exchange (ucx_messages.h): asks a peer for the region
// holding a range, unpacks the key it sends and caches it on the peer's endpoint; drops a cached
// key when its owner revokes it. A refusal (the range is not exposed there) is kInvalidInput with
// the owner's message.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_pending_table.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"
#include "memloom/error.h"

namespace memloom::host {

class UcxRemoteKeys {
 public:
  UcxRemoteKeys(UcxWorker& worker, UcxEndpoints& endpoints)
      : worker_(worker), endpoints_(endpoints) {}

  // The key of the peer's region that holds [address, +bytes), cached or asked for.
  std::shared_ptr<UcxRemoteKey> key_for(const std::shared_ptr<UcxPeer>& peer, uint64_t address,
                                        uint64_t bytes, Deadline deadline);

  // Message handlers (ucx_messages.h), run under the worker's lock.
  void take_reply(const void* data, size_t length, ucp_ep_h);
  void take_revoke(const void* data, size_t length, ucp_ep_h reply_ep);

 private:
  // A request in flight. The reply's key is unpacked and cached by the handler itself, under the
  // worker's lock: a revocation that follows the reply on the wire then always finds it cached.
  struct Pending {
    std::shared_ptr<UcxPeer> peer;
    bool answered = false;
    Status status = Status::kSuccess;
    std::string message;  // a refusal, or why the key could not be used
    std::shared_ptr<UcxRemoteKey> key;
  };

  UcxWorker& worker_;
  UcxEndpoints& endpoints_;
  UcxPendingTable<Pending> pending_;  // its lock guards the entries' fields
};

}  // namespace memloom::host
