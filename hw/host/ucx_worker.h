// One UCX context and worker for one Transport, shared by its threads (UCS_THREAD_MODE_MULTI):
// transfer threads progress it while they wait (no hand-off on the latency path); a progress
// thread answers peers otherwise, sleeping on the worker's event fd once 100 us passed without a
// message (idle, it costs no CPU).
//
// Lock order: UCX takes the worker's lock inside every ucp_* call and runs callbacks under it, so
// code here never calls into UCX while holding a mutex of its own that a callback also takes.
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
  // `rma`: UCP_FEATURE_RMA. Without it UCX installs no handlers for its software RMA, which writes
  // and reads wherever a message says (no remote key checked), so a process speaking UCP directly
  // cannot reach memory. `ipv6`: UCX_TCP_AF_PRIO=inet6 where unset (see check_ipv6_host).
  explicit UcxWorker(bool rma = true, bool ipv6 = false);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // PEER (UCX reports a dead peer), or NONE where UCX_TLS leaves only transports within this host,
  // which cannot serve PEER (deadlines find dead peers). Both sides' endpoints must agree.
  ucp_err_handling_mode_t error_mode() const { return error_mode_; }
  // "UCX_TLS=sm,self, endpoints without peer error handling", for when a peer's differs.
  std::string endpoint_setting() const;

  // Whether a wait asks the interrupt check (src/base/interrupt_check.h): a transfer's do; those
  // releasing what a failed transfer holds do not, so an interruption cannot cut its cleanup short.
  enum class Interruptible { kNo, kYes };

  // While one lives (a transfer call, first message to last answer), its thread progresses the
  // worker and the progress thread stands aside: two threads taking turns on its spin lock slow
  // both. Not across a wait outside UCX (the listener check's connect): nobody would answer peers.
  // The last to leave wakes the progress thread where peers have connected (they may wait for an
  // answer); else it takes over within a millisecond: waking it after every call would make it
  // compete for a core with the peer that the next call waits for.
  class CallerScope {
   public:
    explicit CallerScope(UcxWorker& worker) : worker_(worker) {
      worker_.progressing_callers_.fetch_add(1);
    }
    ~CallerScope();
    CallerScope(const CallerScope&) = delete;
    CallerScope& operator=(const CallerScope&) = delete;

   private:
    UcxWorker& worker_;
  };

  // A peer connected to this worker's listener: from now on it may wait for answers.
  void note_peer_connected() { peers_connected_ = true; }

  // Runs what the worker has ready now, without waiting (a few progress calls at most): a
  // requester between messages of one call lets earlier messages' rendezvous go on while it builds
  // the next one, instead of only once it waits.
  void progress_ready();

  // Until `done()` holds; false if the deadline passed first. kYes throws kInterrupted if asked.
  bool progress_until(const std::function<bool()>& done, Deadline deadline,
                      Interruptible interruptible = Interruptible::kNo);

  // Progresses while `left()` (requests under way on an endpoint about to be closed by force, or
  // its last flush) keeps falling: until 0, a 20 ms stall (a stopped or dead peer) or 2 s, so that
  // a live peer's transfers end first: UCX 1.13 aborts a serving process whose reply loses its
  // connection midway ("tcp_ep.c:939 Assertion `ep->flags & UCT_TCP_EP_FLAG_PUT_TX_WAITING_ACK'
  // failed" over TCP for a rendezvous put, "Endpoint timeout" in ucp_get_req_handler for a get).
  void progress_while_ending(const std::function<size_t()>& left);

  // Once the callbacks' owners exist; `housekeeping` runs on the thread about once a second.
  void start_progress_thread(std::function<void()> housekeeping);
  void stop_progress_thread();  // before the objects its callbacks touch go; idempotent
  // The destructor then leaves the worker and context open: freeing a worker with requests on it,
  // UCX 1.13 aborts ("pending request ... should have been flushed") or calls into gone objects.
  void keep_open_at_destruction() { keep_open_ = true; }
  // Destroys the worker now, the context at destruction: while the objects its callbacks reach
  // still live, for requests that UCX never ends but ends here (ucx_am_server.h). Stops the
  // progress thread first; nothing may use the worker after. Idempotent.
  void destroy_worker();

 private:
  void progress_loop();
  // Waits for the wake pipe or, `with_events`, the event fd, and empties the wake pipe: a wake-up
  // left there would make every later wait return.
  void wait_for_events(int timeout_ms, bool with_events = true);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_err_handling_mode_t error_mode_ = UCP_ERR_HANDLING_MODE_PEER;
  std::string user_transports_;  // the user's UCX_TLS, "" where unset
  int event_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  bool keep_open_ = false;
  // CallerScopes: the progress thread parks on the wake pipe while any live (CallerScope says who
  // wakes it).
  std::atomic<int> progressing_callers_{0};
  std::atomic<bool> progress_thread_parked_{false};
  std::atomic<bool> peers_connected_{false};
  std::function<void()> housekeeping_;
  std::thread progress_thread_;
};

// One call's UCX requests not completed, and the first error one completed with. Each also counts
// in `endpoint` (UcxPeer::in_flight), which a forced close lets fall first.
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

inline std::string ucx_error(const std::string& what, ucs_status_t status) {
  return what + ": " + ucs_status_string(status);
}

}  // namespace memloom::host
