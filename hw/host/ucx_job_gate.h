// The job proof, in active messages on a fresh endpoint before its first request: both ends show
// they know the job's secret (hal::TransportOptions::job_secret) by an HMAC over fresh nonces of
// both sides and the serving endpoint's address, so a proof seen on one connection is worth nothing
// on another, and neither side's proof can be reflected as the other's.
//
//   kHello      requester -> owner   hello id, requester nonce            (reply endpoint asked)
//   kChallenge  owner -> requester   hello id, owner nonce, owner proof
//   kProof      requester -> owner   hello id, requester proof            (reply endpoint asked)
//   kVerdict    owner -> requester   hello id, status (0: admitted)
//
// The owner admits the accepted endpoint the proof arrived on and refuses requests (remote keys, am
// reads and writes) from any other. The requester goes on only once the owner proved it too.
#pragma once

#include <ucp/api/ucp.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"

namespace memloom::host {

class UcxJobGate {
 public:
  UcxJobGate(UcxWorker& worker, const hal::JobSecret& secret) : worker_(worker), secret_(secret) {}

  // The owner's address, which both proofs name (set once the listener is up).
  void set_own_address(const std::string& address) { own_address_ = address; }

  // The requester's side, once per endpoint. kCommunication when the owner refuses or cannot prove
  // it; kTimeout, kInterrupted.
  void prove_to(const std::shared_ptr<UcxPeer>& peer, Deadline deadline);

  // The owner's side.
  bool admitted(ucp_ep_h ep);
  // An accepted endpoint failed: it is admitted no more (UCX may reuse its handle).
  void forget(ucp_ep_h ep);

  // Message handlers (ucx_messages.h), run under the worker's lock.
  void take_hello(const void* data, size_t length, ucp_ep_h reply_ep);
  void take_challenge(const void* data, size_t length, ucp_ep_h);
  void take_proof(const void* data, size_t length, ucp_ep_h reply_ep);
  void take_verdict(const void* data, size_t length, ucp_ep_h);

 private:
  using Nonce = std::array<uint8_t, 32>;
  struct Pending {  // the requester's side of a proof in flight
    std::shared_ptr<UcxPeer> peer;
    Nonce nonce{};
    bool answered = false;
    bool challenged = false;  // the owner's challenge came: the connection worked
    std::string refusal;      // why the owner is not admitted, or refused us ("" when admitted)
  };
  struct Challenge {  // the owner's side of a hello, until its proof arrives
    Nonce requester{};
    Nonce owner{};
  };

  UcxWorker& worker_;
  const hal::JobSecret secret_;
  std::string own_address_;
  UcxPendingTable<Pending> pending_;  // its lock guards the entries' fields
  std::mutex mutex_;                  // guards challenged_ and admitted_
  // By endpoint and hello id: threads of one requester may prove over one endpoint at once.
  std::map<std::pair<ucp_ep_h, uint64_t>, Challenge> challenged_;
  std::set<ucp_ep_h> admitted_;
};

}  // namespace memloom::host
