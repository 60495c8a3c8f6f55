#include "hw/host/ucx_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "hw/host/ucx_capabilities.h"
#include "memloom/error.h"
#include "src/base/interrupt_check.h"
#include "src/base/log.h"

namespace memloom::host {
namespace {

// How many empty progress calls a waiting thread makes before it sleeps on the event fd: enough to
// catch a reply on the same host without a system call, few enough not to starve the peer's core.
constexpr int kSpinsBeforeSleep = 200;
// How long the progress thread keeps progressing after its last message before it sleeps: a
// requester's next message in a run of small transfers finds it awake. Woken from its sleep for
// each message, it took longer than the wire (README, "Figures": the 8-byte round trip).
constexpr auto kServeSpin = std::chrono::microseconds(100);
// How often a parked progress thread looks whether the callers have left, where none wakes it.
constexpr int kParkedSliceMs = 1;
// A sleeping waiter re-checks at least this often (a wake-up consumed by another thread).
constexpr int kSleepSliceMs = 1;
constexpr auto kEndingStall = std::chrono::milliseconds(20);
constexpr auto kEndingLimit = std::chrono::seconds(2);

// Sets a TCP option of the configuration object (never the environment) where the user left its
// variable unset. UCX 1.13 keeps transport options given to ucp_config_modify under their name
// inside the transport's table (TX_SEG_SIZE, without UCX_TCP_), and warns of the prefixed ones.
void default_unless_set(ucp_config_t* config, const char* variable, const char* value) {
  if (std::getenv(variable) != nullptr) return;
  const char* name = variable + std::strlen("UCX_TCP_");
  ucs_status_t status = ucp_config_modify(config, name, value);
  if (status != UCS_OK) MEMLOOM_LOG(kDebug, ucx_error(std::string("UCX default ") + name, status));
}

}  // namespace

UcxWorker::UcxWorker(bool rma, bool ipv6) {
  if (const char* chosen = std::getenv("UCX_TLS")) user_transports_ = chosen;
  const uint64_t features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | (rma ? UCP_FEATURE_RMA : 0);
  std::string transports;  // UCX_TLS for the context, "" for the user's
  const auto configure = [&](ucp_config_t* config) {
    // UCX's TCP transport moves RMA in software, in segments of 8 KiB by default; 256 KiB
    // segments doubled 64 MiB put/get between emulated nodes.
    default_unless_set(config, "UCX_TCP_TX_SEG_SIZE", "256k");
    default_unless_set(config, "UCX_TCP_RX_SEG_SIZE", "256k");
    if (ipv6) default_unless_set(config, "UCX_TCP_AF_PRIO", "inet6");
    return transports.empty() ? UCS_OK : ucp_config_modify(config, "TLS", transports.c_str());
  };
  std::string error;
  context_ = open_ucx_context(features, &error, configure);
  if (context_ != nullptr && !offers_peer_failure_detection(context_resources(context_))) {
    error_mode_ = UCP_ERR_HANDLING_MODE_NONE;
    static std::atomic<bool> warned{false};  // every transport of the process finds this UCX_TLS
    if (!warned.exchange(true)) {
      MEMLOOM_LOG(kWarn, "transport: UCX_TLS="
                             << user_transports_
                             << " leaves UCX no transport that detects a failed peer (its"
                                " shared-memory transports cannot), so UCX endpoints go without"
                                " peer error handling: a dead peer is found only when a call's"
                                " deadline passes");
    }
    // UCX's client-server connections (memloom's listener) fail unless a network transport is
    // enabled on the listener's device ("device lo is not enabled"). With tcp added and no peer
    // error handling, UCX 1.13 still gives peers on this host only shared-memory lanes; tcp carries
    // connection setup and other hosts. An exclusion list ("^...") leaves tcp in unless it says so.
    if (!user_transports_.empty() && user_transports_[0] != '^') {
      ucp_cleanup(context_);
      transports = user_transports_ + ",tcp";
      context_ = open_ucx_context(features, &error, configure);
    }
  }
  if (context_ == nullptr) raise(Status::kCommunication, error);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_MULTI;
  ucp_worker_attr_t worker_attr{};
  worker_attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  std::string problem;
  ucs_status_t status = ucp_worker_create(context_, &worker_params, &worker_);
  if (status != UCS_OK) {
    problem = ucx_error("UCX worker", status);
  } else if (ucp_worker_query(worker_, &worker_attr) != UCS_OK ||
             worker_attr.thread_mode != UCS_THREAD_MODE_MULTI) {
    problem = "this UCX has no multi-threaded workers (built without --enable-mt)";
  } else if ((status = ucp_worker_get_efd(worker_, &event_fd_)) != UCS_OK) {
    problem = ucx_error("UCX worker event fd", status);
  } else if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    problem = std::string("transport wake pipe: ") + std::strerror(errno);
  }
  if (!problem.empty()) {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    raise(Status::kCommunication, problem);
  }
}

std::string UcxWorker::endpoint_setting() const {
  return "UCX_TLS=" + (user_transports_.empty() ? std::string("(unset)") : user_transports_) +
         (error_mode_ == UCP_ERR_HANDLING_MODE_PEER ? ", endpoints with peer error handling"
                                                    : ", endpoints without peer error handling");
}

UcxWorker::~UcxWorker() {
  stop_progress_thread();
  if (!keep_open_) {
    destroy_worker();
    ucp_cleanup(context_);
  }
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void UcxWorker::destroy_worker() {
  stop_progress_thread();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  worker_ = nullptr;
}

void UcxWorker::start_progress_thread(std::function<void()> housekeeping) {
  housekeeping_ = std::move(housekeeping);
  progress_thread_ = std::thread([this] { progress_loop(); });
}

void UcxWorker::stop_progress_thread() {
  if (!progress_thread_.joinable()) return;
  stopping_ = true;
  [[maybe_unused]] ssize_t woken = ::write(wake_pipe_[1], "x", 1);  // a full pipe wakes it too
  progress_thread_.join();
}

void UcxWorker::wait_for_events(int timeout_ms, bool with_events) {
  pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {event_fd_, POLLIN, 0}};
  if (::poll(fds, with_events ? 2 : 1, timeout_ms) < 0 && errno != EINTR) {
    MEMLOOM_LOG(kWarn, "transport: poll on the UCX event fd failed: " << std::strerror(errno));
  }
  if ((fds[0].revents & POLLIN) != 0) {
    char drained[64];
    while (::read(wake_pipe_[0], drained, sizeof(drained)) > 0) {
    }
  }
}

void UcxWorker::progress_loop() {
  constexpr auto kHousekeepingPeriod = std::chrono::seconds(1);
  auto next_housekeeping = std::chrono::steady_clock::now() + kHousekeepingPeriod;
  while (!stopping_) {
    // Stops as soon as a caller comes, even with work left (CallerScope says why), and when the
    // housekeeping or a stop is due: a peer whose messages never pause for kServeSpin would
    // otherwise keep it here.
    for (auto idle_since = std::chrono::steady_clock::now();
         progressing_callers_.load() == 0 && !stopping_;) {
      const bool worked = ucp_worker_progress(worker_) != 0;
      const auto now = std::chrono::steady_clock::now();
      if (worked) idle_since = now;
      if (now - idle_since >= kServeSpin || now >= next_housekeeping) break;
    }
    if (std::chrono::steady_clock::now() >= next_housekeeping) {
      housekeeping_();
      next_housekeeping = std::chrono::steady_clock::now() + kHousekeepingPeriod;
    }
    if (progressing_callers_.load() > 0) {
      // A caller progresses the worker: wait for the last one to leave (CallerScope).
      progress_thread_parked_ = true;
      if (progressing_callers_.load() > 0) wait_for_events(kParkedSliceMs, /*with_events=*/false);
      progress_thread_parked_ = false;
    } else if (ucp_worker_arm(worker_) != UCS_ERR_BUSY) {  // BUSY: events came; progress again
      wait_for_events(1000);
    }
  }
}

UcxWorker::CallerScope::~CallerScope() {
  if (worker_.progressing_callers_.fetch_sub(1) == 1 && worker_.peers_connected_.load() &&
      worker_.progress_thread_parked_.load()) {
    [[maybe_unused]] ssize_t woken = ::write(worker_.wake_pipe_[1], "x", 1);
  }
}

bool UcxWorker::progress_until(const std::function<bool()>& done, Deadline deadline,
                               Interruptible interruptible) {
  const bool asks = interruptible == Interruptible::kYes && base::interrupt_check_installed();
  const CallerScope caller(*this);
  int idle = 0;
  while (!done()) {
    if (deadline.expired()) return false;
    if (asks) base::throw_if_interrupted();
    if (ucp_worker_progress(worker_) != 0) {
      idle = 0;
    } else if (++idle == kSpinsBeforeSleep) {
      idle = 0;
      if (ucp_worker_arm(worker_) == UCS_OK)
        wait_for_events(deadline.poll_timeout_ms(kSleepSliceMs));
    }
  }
  return true;
}

void UcxWorker::progress_ready() {
  // Bounded: a peer whose messages keep coming would otherwise keep the caller here.
  constexpr int kMostRounds = 8;
  for (int round = 0; round < kMostRounds && ucp_worker_progress(worker_) != 0; ++round) {
  }
}

void UcxWorker::progress_while_ending(const std::function<size_t()>& left) {
  const Deadline limit = Deadline::after(kEndingLimit);
  for (size_t now_left = left(); now_left != 0 && !limit.expired(); now_left = left()) {
    const Deadline stall = Deadline::after(kEndingStall).earlier(limit);
    if (!progress_until([&] { return left() < now_left; }, stall)) return;
  }
}

}  // namespace memloom::host
