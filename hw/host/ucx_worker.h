// One UCX context and worker for one Transport, shared by its threads (UCS_THREAD_MODE_MULTI):
// transfer threads progress it themselves while they wait (no hand-off on the latency path), and a
// progress thread answers peers when no user thread is in the library, sleeping on the worker's
// event fd, so an idle transport costs no CPU.
//
// Lock order: UCX takes the worker's lock inside every ucp_* call and runs callbacks under it, so
// code here never calls into UCX while holding a mutex of its own that a callback also takes.
// No UCX_* variable is set; the configuration gets defaults where the user set none (TCP segment
// sizes), and tcp where UCX_TLS names only transports within a host.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "memloom/deadline.h"

namespace memloom::host {

class UcxWorker {
 public:
  // `rma`: UCP_FEATURE_RMA. Without it UCX installs no handlers for its software RMA (which,
  // without RDMA, writes and reads wherever a message says, checking no remote key), so a process
  // speaking UCP directly cannot reach memory. `ipv6`: listening on IPv6, UCX's TCP interfaces use
  // it too (UCX_TCP_AF_PRIO=inet6 where unset; check_ipv6_host in ucx_transport.cpp says why).
  explicit UcxWorker(bool rma = true, bool ipv6 = false);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // Both sides' endpoint error handling: PEER (UCX reports a dead peer), or NONE where UCX_TLS
  // leaves only transports within this host, which cannot serve PEER (deadlines find dead peers).
  ucp_err_handling_mode_t error_mode() const { return error_mode_; }
  // "UCX_TLS=sm,self, endpoints without peer error handling", for when a peer's differs (UCX
  // refuses to connect endpoints whose error handling differs).
  std::string endpoint_setting() const;

  // Whether a wait asks the interrupt check (src/base/interrupt_check.h): a transfer's do; those
  // releasing what a failed transfer holds do not, so an interruption cannot cut its cleanup short.
  enum class Interruptible { kNo, kYes };

  // While one lives (a transfer call, first message to last answer), its thread progresses the
  // worker and the progress thread stands aside: with both taking turns on the worker's spin lock,
  // 1024 x 4 KiB writes over TCP between two processes ran at 0.49 Mop/s at best, 0.64 without.
  // Not across a wait outside UCX (the listener check's connect): nobody would answer peers then.
  class CallerScope {
   public:
    explicit CallerScope(UcxWorker& worker);
    ~CallerScope();
    CallerScope(const CallerScope&) = delete;
    CallerScope& operator=(const CallerScope&) = delete;

   private:
    UcxWorker& worker_;
  };

  // Progresses until `done()` holds; false when the deadline passed first. Spins while there is
  // work, then sleeps on the event fd in short slices. kYes throws kInterrupted when asked to.
  bool progress_until(const std::function<bool()>& done, Deadline deadline,
                      Interruptible interruptible = Interruptible::kNo);

  // Progresses while `left()` (every call's requests under way on an endpoint about to be closed by
  // force, or its last flush) keeps falling: until 0, a 20 ms stall (what a stopped or dead peer
  // costs the call), or 2 s. Lets a live peer's transfers under way end before their endpoint is
  // closed by force: UCX 1.13 aborts a serving process whose reply loses its connection midway
  // (over TCP: "tcp_ep.c:939 Assertion `ep->flags & UCT_TCP_EP_FLAG_PUT_TX_WAITING_ACK' failed"
  // for a rendezvous put, "Fatal: unexpected error: Endpoint timeout" in ucp_get_req_handler for a
  // software get).
  void progress_while_ending(const std::function<size_t()>& left);

  // Once the callbacks' owners exist; `housekeeping` runs on the thread about once a second.
  void start_progress_thread(std::function<void()> housekeeping);
  // Before the objects its callbacks touch go away. Idempotent.
  void stop_progress_thread();
  // The destructor then leaves the worker and context open until the process exits: destroying a
  // worker UCX still holds a request on, UCX 1.13 aborts the process ("pending request ... should
  // have been flushed") or calls back into objects already gone.
  void keep_open_at_destruction() { keep_open_ = true; }

 private:
  void progress_loop();
  // The context found only host-local transports: endpoints go without peer error handling, and
  // the context is opened again with tcp added to UCX_TLS for connection setup.
  ucs_status_t reopen_for_host_local_transports(ucp_config_t* config, const ucp_params_t& params);
  // Waits until the wake pipe or, `with_events`, the event fd is readable, for `timeout_ms` at
  // most, and empties the wake pipe: a wake-up left there would make every later wait return.
  void wait_for_events(int timeout_ms, bool with_events = true);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_err_handling_mode_t error_mode_ = UCP_ERR_HANDLING_MODE_PEER;
  // The user's UCX_TLS as this worker found it (before tcp was added), "" where unset.
  std::string user_transports_;
  int event_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  bool keep_open_ = false;
  // Threads inside progress_until or a CallerScope: the progress thread parks on the wake pipe
  // while there are any, and the last one out wakes it.
  std::atomic<int> progressing_callers_{0};
  std::atomic<bool> progress_thread_parked_{false};
  std::function<void()> housekeeping_;
  std::thread progress_thread_;
};

// One call's UCX requests not completed, and the first error one completed with. Each also counts
// in its endpoint's count of every call's (`endpoint`, UcxPeer::in_flight), which a forced close
// lets fall first.
struct UcxRequestCount {
  explicit UcxRequestCount(std::shared_ptr<std::atomic<size_t>> endpoint)
      : endpoint(std::move(endpoint)) {}
  std::atomic<size_t> outstanding{0};
  std::atomic<ucs_status_t> first_error{UCS_OK};
  const std::shared_ptr<std::atomic<size_t>> endpoint;
  void started() {
    outstanding.fetch_add(1);
    endpoint->fetch_add(1);
  }
  void ended() {
    endpoint->fetch_sub(1);
    outstanding.fetch_sub(1);
  }
  void fail(ucs_status_t status) {
    ucs_status_t expected = UCS_OK;
    first_error.compare_exchange_strong(expected, status);
  }
};

// "what: UCX's description of status".
inline std::string ucx_error(const std::string& what, ucs_status_t status) {
  return what + ": " + ucs_status_string(status);
}

}  // namespace memloom::host
