// The UCX transport's endpoints: the listener and the endpoints it accepted (the owner's side),
// and one endpoint per peer address this process transfers to, with the remote keys it asked for
// (kRegionRequest, answered by ucx_region_registry.h) until the owner revokes them.
//
// With PEER error handling (UcxWorker::error_mode) a dead peer or a broken link marks its endpoint
// failed; without, the call that reaches its deadline closes it by force. Either way the next
// transfer to that address creates a fresh one, so a peer restarted there is reached again.
//
// An accepted endpoint that has not passed the job proof (ucx_job_gate.h) within 5 s is closed, and
// at most 256 wait at once (a new one closes the oldest), so silent or hostile connections neither
// pile up nor keep the job's ranks out.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "hw/host/ucx_messages.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/base/range_map.h"

namespace memloom::host {

// A remote key of a peer's region, unpacked for the endpoint it came over; destroyed with its last.
using UcxRemoteKey = std::shared_ptr<std::remove_pointer_t<ucp_rkey_h>>;

// An endpoint to one peer address, held (shared) by transfers while they run: one dropped from the
// cache stays valid for them; the last holder closes it.
class UcxPeer {
 public:
  UcxPeer(UcxWorker& worker, std::string address) : worker_(worker), address_(std::move(address)) {}
  ~UcxPeer();
  UcxPeer(const UcxPeer&) = delete;
  UcxPeer& operator=(const UcxPeer&) = delete;

  const std::string& address() const { return address_; }
  // The endpoint, for a thread no other may close it under (tests speaking UCP directly).
  ucp_ep_h ep() const { return ep_.load(); }
  // `use(ep)` with the endpoint, null once force_close() ran (maybe on another thread), which
  // lets uses under way end before it closes: none gets a closed one.
  template <typename Use>
  auto with_ep(Use use) const {
    users_.fetch_add(1);
    const struct Leave {
      std::atomic<int>& users;
      ~Leave() { users.fetch_sub(1); }
    } leave{users_};
    return use(ep_.load());
  }
  // A control message (ucx_messages.h), asking for a reply endpoint; dropped once closed by force.
  void send(unsigned id, std::string bytes) const;
  // `issue(ep)`, a UCX request on the endpoint; UCS_ERR_CANCELED once it was closed by force.
  template <typename Issue>
  ucs_status_ptr_t on_ep(Issue issue) const {
    return with_ep(
        [&](ucp_ep_h ep) { return ep == nullptr ? UCS_STATUS_PTR(UCS_ERR_CANCELED) : issue(ep); });
  }
  bool failed() const { return failure_ != UCS_OK; }
  ucs_status_t failure() const { return failure_; }
  void mark_failed(ucs_status_t error) { failure_ = error; }
  // kTimeout for UCS_OK (a transfer's deadline passed), else kCommunication with `status`.
  [[noreturn]] void raise_failed(ucs_status_t status) const;
  // Progresses until `entry` of `table` (a request to this peer) is answered or the endpoint
  // failed; kTimeout ("timed out " + `doing`) past `deadline`, kInterrupted when asked to.
  template <typename Entry>
  void await(UcxPendingTable<Entry>& table, const Entry& entry, Deadline deadline,
             const std::string& doing) const {
    auto answered = [&] {
      auto lock = table.lock();
      return entry.answered || failed();
    };
    if (!worker_.progress_until(answered, deadline, UcxWorker::Interruptible::kYes)) {
      raise(Status::kTimeout, "timed out " + doing);
    }
  }
  // The owner admitted this endpoint after the job proof (ucx_job_gate.h).
  bool proven() const { return proven_; }
  void mark_proven() { proven_ = true; }

  // The cached key whose region holds [address, +bytes), or null.
  UcxRemoteKey key_for(uint64_t address, uint64_t bytes);
  // Caches the key of the region [base, +size) the owner named, replacing any it overlaps.
  void cache_key(uint64_t base, uint64_t size, UcxRemoteKey key);
  // Drops the key of the region at `base` (the owner withdrew it).
  void drop_key(uint64_t base);
  // Every call's UCX requests on the endpoint not yet completed (UcxRequestCount::endpoint).
  const std::shared_ptr<std::atomic<size_t>>& in_flight() const { return in_flight_; }
  // Closes the endpoint by force (requests under way end as canceled, letting go of buffers). On a
  // live peer, every call's requests under way end first, within 2 s (progress_while_ending in
  // ucx_worker.h says why); new ones find no endpoint meanwhile.
  void force_close();

 private:
  friend class UcxEndpoints;
  UcxWorker& worker_;
  const std::string address_;
  std::atomic<ucp_ep_h> ep_{nullptr};
  mutable std::atomic<int> users_{0};  // threads inside with_ep()
  const std::shared_ptr<std::atomic<size_t>> in_flight_ = std::make_shared<std::atomic<size_t>>(0);
  std::atomic<ucs_status_t> failure_{UCS_OK};  // an error once failed
  std::atomic<bool> proven_{false};
  std::mutex keys_mutex_;
  base::RangeMap<UcxRemoteKey> keys_;
};

class UcxEndpoints {
 public:
  // `accepted_failed(ep)`: an accepted endpoint fails or is dropped (before it is closed);
  // `admitted(ep)`: whether it passed the job proof (null: no proof is asked).
  UcxEndpoints(UcxWorker& worker, std::function<void(ucp_ep_h)> accepted_failed,
               std::function<bool(ucp_ep_h)> admitted = nullptr)
      : worker_(worker),
        accepted_failed_(std::move(accepted_failed)),
        admitted_(std::move(admitted)) {}
  ~UcxEndpoints() { close_all(); }
  UcxEndpoints(const UcxEndpoints&) = delete;
  UcxEndpoints& operator=(const UcxEndpoints&) = delete;

  // Listens on `host` (an IP literal), any free port; returns the port.
  uint16_t listen(const std::string& host);

  // The live endpoint to `address`, created when there is none or it failed (its listener check
  // waits until `deadline` at most).
  std::shared_ptr<UcxPeer> peer(const std::string& address, const std::string& host, uint16_t port,
                                Deadline deadline);
  // Forgets `peer` if it is still the one cached for its address.
  void drop(const std::shared_ptr<UcxPeer>& peer);

  // The key of `peer`'s region that holds [address, +bytes), cached or asked for.
  UcxRemoteKey key_for(const std::shared_ptr<UcxPeer>& peer, uint64_t address, uint64_t bytes,
                       Deadline deadline);
  // Message handlers (ucx_messages.h), run under the worker's lock.
  void take_region_reply(const void* data, size_t length, ucp_ep_h);
  void take_revoke(const void* data, size_t length, ucp_ep_h reply_ep);

  // Closes accepted endpoints that did not pass the job proof within kProofTimeout (housekeeping).
  void close_unproven();
  // Closes the listener and every endpoint (flushing briefly), also those that fail or come
  // meanwhile; before the worker goes. Once it went (destroy_worker), only forgets them.
  void close_all();

  static constexpr auto kProofTimeout = std::chrono::seconds(5);
  static constexpr size_t kMaxUnproven = 256;

 private:
  static void on_connection(ucp_conn_request_h request, void* arg);
  static void on_accepted_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  void close_failed_accepted();

  // A remote-key request in flight. The reply's key is unpacked and cached by the handler itself,
  // under the worker's lock: a revocation that follows the reply on the wire then always finds it.
  struct KeyRequest {
    std::shared_ptr<UcxPeer> peer;
    bool answered = false;
    Status status = Status::kSuccess;
    std::string message;  // a refusal, or why the key could not be used
    UcxRemoteKey key;
    uint64_t base = 0, size = 0;  // the key's region
  };

  UcxWorker& worker_;
  std::function<void(ucp_ep_h)> accepted_failed_;
  std::function<bool(ucp_ep_h)> admitted_;
  ucp_listener_h listener_ = nullptr;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<UcxPeer>> peers_;
  std::map<ucp_ep_h, std::chrono::steady_clock::time_point> accepted_;  // and when
  std::vector<ucp_ep_h> failed_accepted_;     // to close outside UCX's callbacks
  UcxPendingTable<KeyRequest> key_requests_;  // its lock guards the entries' fields
};

}  // namespace memloom::host
