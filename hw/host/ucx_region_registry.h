// The owner's side of the UCX transport: the memory it exposed, registered with UCX (ucp_mem_map)
// with its packed remote key, and the answers to kRegionRequest; a range outside every exposed
// region is refused (kInvalidInput at the requester).
//
// withdraw() revokes the key at every peer that got it and waits (bounded) for each to confirm, or
// to be gone, and for the am path's copies to end (hold()), before unmapping: after it returns, no
// peer starts a new transfer into the range. Transports other than RDMA do not enforce a remote key
// in hardware, so this revocation is what makes a withdrawal hold for them.
//
// Device memory UCX cannot register is exposed without ucp_mem_map: its remote key is refused with
// kNotSupported, so rma requesters move to am (ucx_transport.h).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "hw/host/buffer_staging.h"
#include "hw/host/ucx_job_gate.h"
#include "src/base/range_map.h"

namespace memloom::host {

class UcxRegionRegistry {
 public:
  // `serves_keys`: false where the context has no RMA (keys refused with kNotSupported).
  UcxRegionRegistry(UcxWorker& worker, UcxJobGate& gate, bool serves_keys,
                    const BufferStaging& staging)
      : worker_(worker), gate_(gate), serves_keys_(serves_keys), staging_(staging) {}
  ~UcxRegionRegistry() { unmap_all(); }
  UcxRegionRegistry(const UcxRegionRegistry&) = delete;
  UcxRegionRegistry& operator=(const UcxRegionRegistry&) = delete;

  // Unregisters and forgets every region, at the transport's end: before its worker goes, since
  // UCX 1.16 defers unmapping memory that a request still uses to the worker's progress.
  void unmap_all();

  // Named in revocations (set once the listener is up).
  void set_own_address(const std::string& address) { own_address_ = address; }

  // The same range again is harmless; one that overlaps another is kInvalidInput.
  void expose(void* address, size_t size);
  void withdraw(void* address);

  // A hold, for a copy, on the exposed region that contains a range, until the token's last copy
  // goes. A request's ranges that stay in one region share its hold: one lookup under the lock.
  struct Hold {
    std::shared_ptr<void> token;  // null when no region contains the range (or it is withdrawn)
    uint64_t start = 0, end = 0;  // the region
    bool staged = false;          // device memory the staging moves (never handed to UCX)
    bool covers(uint64_t address, uint64_t bytes) const {
      return token != nullptr && bytes != 0 && address >= start && address < end &&
             bytes <= end - address;
    }
  };
  // Of [address, +bytes); no token for an empty range.
  Hold hold(uint64_t address, uint64_t bytes);

  // Message handlers (ucx_messages.h), run under the worker's lock. A request from an endpoint
  // that has not proven the job secret is refused: no remote key leaves for a process outside.
  void answer_request(const void* data, size_t length, ucp_ep_h reply_ep);
  void take_ack(const void* data, size_t length, ucp_ep_h);
  // An accepted endpoint failed: holders behind it no longer need to confirm revocations.
  void forget_holder(ucp_ep_h ep);

 private:
  struct Region {
    ucp_mem_h memory = nullptr;  // null for device memory that is staged (no remote key)
    std::string packed_key;
    std::set<ucp_ep_h> holders;  // accepted endpoints whose peer got the key
    std::atomic<int> copies{0};  // holds of the am path (copies in progress)
  };

  UcxWorker& worker_;
  UcxJobGate& gate_;
  const bool serves_keys_;
  const BufferStaging& staging_;
  std::string own_address_;
  std::mutex mutex_;
  base::RangeMap<std::shared_ptr<Region>> regions_;
  std::map<uint64_t, ucp_ep_h> unconfirmed_;  // revoke id -> holder still to confirm
  uint64_t next_revoke_id_ = 1;
};

}  // namespace memloom::host
