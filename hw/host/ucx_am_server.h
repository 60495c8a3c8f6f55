// The owner's side of the UCX transport's am data path, served whatever path this process's own
// transfers use. The bytes move once every range of a request lies inside one exposed region
// (ucx_region_registry.h) and it came over a proven endpoint (ucx_job_gate.h); else a kAmReply
// refuses it with a status and a message, and no byte moves.
//
// Writes: eager data is copied in place inside the handler; rendezvous data is received straight
// into the region, or for several ranges into a pooled buffer and copied on ("Packing" in
// ucx_am_requests.h). The reply goes once the data is in place, so the requester's completion
// means the bytes landed. Reads: the reply sends the region's bytes (several ranges: packed first).
//
// Device memory is never handed to UCX nor touched here; the staging copies it from UCX's eager
// buffer or the pooled buffer a rendezvous write was received into, or into the one a read's reply
// is sent from. A staging requester's message fits one pooled buffer; a larger one gets its own.
//
// Every copy holds its regions (UcxRegionRegistry::hold) until it ends, so withdraw() does not
// unmap memory a copy is still using, and a request that arrives after withdraw() is refused.
//
// A rendezvous receive whose endpoint failed is abandoned: UCX 1.16 never ends it (1.13 fails it),
// so its holds end when the endpoint fails, which lets withdraw() go on; no more bytes can come
// over a failed endpoint. The request itself (and a pooled buffer it leased) lives on until UCX
// ends it, at the latest when the worker is destroyed (UcxWorker::destroy_worker).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "hw/host/ucx_region_registry.h"

namespace memloom::host {

class UcxAmServer {
 public:
  // Registers the handlers on `worker`.
  UcxAmServer(UcxWorker& worker, UcxRegionRegistry& regions, UcxJobGate& gate,
              std::shared_ptr<StagingBufferPool> staging);
  // Frees abandoned requests: only once the worker is destroyed, after which UCX calls nothing.
  ~UcxAmServer();
  UcxAmServer(const UcxAmServer&) = delete;
  UcxAmServer& operator=(const UcxAmServer&) = delete;

  // The owner's address, named in refusals (set once the listener is up).
  void set_own_address(const std::string& address) { own_address_ = address; }

  // As UcxAmRequests::requests_held(), less the abandoned ones.
  size_t requests_held() const { return requests_held_.load() - requests_abandoned(); }
  size_t requests_abandoned() const;

  // An accepted endpoint failed or was dropped: abandons its rendezvous receives.
  void endpoint_failed(ucp_ep_h ep);

 private:
  struct Request;  // one being served, and the handlers and UCX callbacks that serve it
  // A rendezvous receive ended: true if it had been abandoned.
  bool end_receiving(Request* request);

  UcxWorker& worker_;
  UcxRegionRegistry& regions_;
  UcxJobGate& gate_;
  const std::shared_ptr<StagingBufferPool> staging_;
  std::string own_address_;
  std::atomic<size_t> requests_held_{0};
  mutable std::mutex receiving_mutex_;           // never held across a call into UCX
  std::multimap<ucp_ep_h, Request*> receiving_;  // rendezvous receives of writes, by endpoint
  std::set<Request*> abandoned_;                 // those whose endpoint failed
};

}  // namespace memloom::host
