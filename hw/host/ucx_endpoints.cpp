#include "hw/host/ucx_endpoints.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "src/base/fd_wait.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/base/tcp_address.h"
#include "src/base/unique_fd.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;

// How long the listener check before a new endpoint waits for the peer's host to answer.
constexpr auto kListenerCheckTimeout = std::chrono::seconds(1);

// UCX 1.16 (openucx/ucx#9964) spins for good inside ucp_am_send_nbx on an endpoint whose
// connection was refused, so the job proof's first message never returns (1.13 fails the send).
// So before UCX gets a peer, one plain TCP connect asks whether anything listens on its port.
// The errno of a refusal (ECONNREFUSED, or the host or network unreachable); 0, leaving the peer to
// UCX, when the connection is taken or no answer comes in time (a slow network or a filter).
int connect_refusal(const sockaddr_storage& address, socklen_t length, Deadline deadline) {
  base::UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return 0;
  int error = 0;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      error = 0;
      socklen_t size = sizeof(error);
      if (!base::wait_ready(fd.get(), POLLOUT,
                            deadline.earlier(Deadline::after(kListenerCheckTimeout))) ||
          ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
        error = 0;
      }
    }
  }
  return error == ECONNREFUSED || error == EHOSTUNREACH || error == ENETUNREACH ? error : 0;
}

// A closing endpoint gets this long to flush what is in flight, or to be torn down (force).
constexpr auto kCloseTimeout = std::chrono::seconds(2);

// Closes `ep` (flushing it first unless `force`), progressing until done or kCloseTimeout. Without
// peer error handling UCX leaves a forced close undefined (ucp.h): the endpoint is flushed and
// closed in the background instead, unwaited (on a stopped peer it stays until the worker goes).
void close_endpoint(UcxWorker& worker, ucp_ep_h ep, bool force) {
  const bool in_background = force && worker.error_mode() == UCP_ERR_HANDLING_MODE_NONE;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force && !in_background ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
  if (!UCS_PTR_IS_PTR(request)) return;
  if (in_background) {
    ucp_request_free(request);
    return;
  }
  const bool closed =
      worker.progress_until([&] { return ucp_request_check_status(request) != UCS_INPROGRESS; },
                            Deadline::after(kCloseTimeout));
  if (!closed) {
    // UCX still owns the request: canceled, the endpoint is torn down when UCX gets to it.
    ucp_request_cancel(worker.worker(), request);
    MEMLOOM_LOG(kDebug, "transport: an endpoint did not close in time");
  }
  ucp_request_free(request);
}

}  // namespace

UcxPeer::~UcxPeer() {
  keys_ = {};  // remote keys go before the endpoint they were unpacked for
  if (ucp_ep_h ep = ep_.load()) close_endpoint(worker_, ep, failed());
}

void UcxPeer::raise_failed(ucs_status_t status) const {
  if (status == UCS_OK) raise(Status::kTimeout, "transfer with " + address_ + " timed out");
  raise(Status::kCommunication, ucx_error("transfer with " + address_ + " failed", status));
}

UcxRemoteKey UcxPeer::key_for(uint64_t address, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(keys_mutex_);
  const auto* interval = keys_.find_containing(address, bytes);
  return interval == nullptr ? nullptr : interval->payload;
}

void UcxPeer::cache_key(uint64_t base, uint64_t size, UcxRemoteKey key) {
  std::lock_guard<std::mutex> lock(keys_mutex_);
  // A region the owner withdrew and exposed again may come back with another size.
  while (const auto* stale = keys_.overlapping(base, size)) keys_.erase(stale->start);
  keys_.insert(base, size, std::move(key));
}

void UcxPeer::drop_key(uint64_t base) {
  UcxRemoteKey dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(keys_mutex_);
  if (const auto* interval = keys_.find(base)) {
    dropped = interval->payload;
    keys_.erase(base);
  }
}

void UcxPeer::send(unsigned id, std::string bytes) const {
  with_ep([&](ucp_ep_h ep) { msg::send(ep, id, std::move(bytes), /*reply=*/true); });
}

void UcxPeer::force_close() {
  const bool live = !failed();
  {
    // Not held while closing: closing runs callbacks, and a revocation's takes this lock.
    std::lock_guard<std::mutex> lock(keys_mutex_);
    keys_ = {};
  }
  // Of two callers closing at once, one closes. A with_ep() that loaded the endpoint before the
  // exchange is inside one UCX call and ends soon.
  ucp_ep_h ep = ep_.exchange(nullptr);
  const Deadline bound = Deadline::after(kCloseTimeout);
  while (ep != nullptr && users_.load() != 0) {
    if (bound.expired()) {
      // Closing it under that call could crash the process; an endpoint left open costs less.
      MEMLOOM_LOG(kError, "transport: a UCX call on the endpoint to "
                              << address_ << " did not return within 2 s; it is left open");
      ep = nullptr;
      break;
    }
    std::this_thread::yield();
  }
  if (ep != nullptr && live) {
    worker_.progress_while_ending([this] { return in_flight_->load(); });
    // And one flush, so that what completed here has landed there too: else bytes of this call
    // could land after a later call's to the same range on a new endpoint.
    ucp_request_param_t param{};
    const ucs_status_ptr_t flush = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(flush)) {
      worker_.progress_while_ending(
          [&]() -> size_t { return ucp_request_check_status(flush) == UCS_INPROGRESS ? 1 : 0; });
      ucp_request_free(flush);  // one still under way ends with the forced close
    }
  }
  mark_failed(UCS_ERR_CANCELED);
  if (ep != nullptr) close_endpoint(worker_, ep, /*force=*/true);
}

uint16_t UcxEndpoints::listen(const std::string& host) {
  sockaddr_storage address{};
  const socklen_t length = base::ip_socket_address(host, 0, &address);
  if (length == 0) {
    raise(Status::kInvalidInput, "MEMLOOM_HOST_ADDR=" + host + " is not an IP address literal");
  }
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&address);
  params.sockaddr.addrlen = length;
  params.conn_handler.cb = on_connection;
  params.conn_handler.arg = this;
  ucs_status_t status = ucp_listener_create(worker_.worker(), &params, &listener_);
  if (status != UCS_OK) {
    raise(Status::kCommunication,
          ucx_error(
              "cannot listen on " + host + " (MEMLOOM_HOST_ADDR must be an address of this host)",
              status));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  status = ucp_listener_query(listener_, &attr);
  if (status != UCS_OK) raise(Status::kCommunication, ucx_error("UCX listener address", status));
  return base::socket_port(attr.sockaddr);
}

void UcxEndpoints::on_connection(ucp_conn_request_h request, void* arg) {
  auto* self = static_cast<UcxEndpoints*>(arg);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = self->worker_.error_mode();
  params.err_handler.cb = on_accepted_error;
  params.err_handler.arg = self;
  ucp_ep_h ep = nullptr;
  ucs_status_t status = ucp_ep_create(self->worker_.worker(), &params, &ep);
  if (status == UCS_ERR_UNSUPPORTED) {
    // UCX 1.13's answer (it logs "error handling level mismatch") to a requester's endpoint that
    // asked for other error handling (its UCX_TLS differs), which only sees the connection close.
    MEMLOOM_LOG(kWarn, ucx_error("transport: refused a peer's connection", status)
                           << ": its endpoint's error handling differs from this process's ("
                           << self->worker_.endpoint_setting()
                           << "); every process of a job must use the same UCX_TLS");
    return;
  }
  if (status != UCS_OK) {
    MEMLOOM_LOG(kWarn, ucx_error("transport: accepting a peer", status));
    return;
  }
  self->worker_.note_peer_connected();
  ucp_ep_h evicted = nullptr;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->accepted_.emplace(ep, std::chrono::steady_clock::now());
    // Too many waiting for their proof: the oldest goes (closed outside UCX's callback). Counted
    // only past kMaxUnproven accepted at all: a job of up to that many ranks never scans them.
    size_t unproven = 0;
    auto oldest = self->accepted_.end();
    const bool could_overflow = self->admitted_ && self->accepted_.size() > kMaxUnproven;
    for (auto it = self->accepted_.begin(); could_overflow && it != self->accepted_.end(); ++it) {
      if (self->admitted_(it->first)) continue;
      ++unproven;
      if (oldest == self->accepted_.end() || it->second < oldest->second) oldest = it;
    }
    if (unproven > kMaxUnproven) {
      evicted = oldest->first;
      self->accepted_.erase(oldest);
      self->failed_accepted_.push_back(evicted);
    }
  }
  if (evicted != nullptr) {
    MEMLOOM_LOG(kWarn, "transport: more than "
                           << kMaxUnproven
                           << " connections wait for the job proof; the oldest is dropped");
    self->accepted_failed_(evicted);
  }
}

void UcxEndpoints::close_unproven() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<ucp_ep_h> expired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = accepted_.begin(); it != accepted_.end();) {
      if (admitted_ && now - it->second >= kProofTimeout && !admitted_(it->first)) {
        expired.push_back(it->first);
        it = accepted_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!expired.empty()) {
    MEMLOOM_LOG(kDebug, "transport: closing " << expired.size()
                                              << " connection(s) that gave no job proof within "
                                              << kProofTimeout.count() << " s");
  }
  for (ucp_ep_h ep : expired) {
    accepted_failed_(ep);
    close_endpoint(worker_, ep, /*force=*/true);
  }
  close_failed_accepted();
}

void UcxEndpoints::on_accepted_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* self = static_cast<UcxEndpoints*>(arg);
  MEMLOOM_LOG(kDebug, ucx_error("transport: a peer's endpoint failed", status));
  self->accepted_failed_(ep);
  std::lock_guard<std::mutex> lock(self->mutex_);
  if (self->accepted_.erase(ep) != 0) self->failed_accepted_.push_back(ep);
}

void UcxEndpoints::close_failed_accepted() {
  std::vector<ucp_ep_h> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed.swap(failed_accepted_);
  }
  for (ucp_ep_h ep : failed) close_endpoint(worker_, ep, /*force=*/true);
}

std::shared_ptr<UcxPeer> UcxEndpoints::peer(const std::string& address, const std::string& host,
                                            uint16_t port, Deadline deadline) {
  close_failed_accepted();
  std::shared_ptr<UcxPeer> stale;  // released outside the lock: closing progresses the worker
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = peers_.find(address);
    if (it != peers_.end()) {
      if (!it->second->failed()) return it->second;
      stale = std::move(it->second);
      peers_.erase(it);
    }
  }
  stale.reset();
  sockaddr_storage socket_address{};
  const socklen_t length = base::ip_socket_address(host, port, &socket_address);
  if (length == 0) raise(Status::kInvalidInput, "transport address " + address + ": bad host");
  if (const int refusal = connect_refusal(socket_address, length, deadline)) {
    raise(Status::kCommunication,
          "cannot reach transport endpoint " + address + ": " + std::strerror(refusal) +
              " (no transport listens there: the peer is gone or has not started)");
  }
  auto fresh = std::make_shared<UcxPeer>(worker_, address);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&socket_address);
  params.sockaddr.addrlen = length;
  params.err_mode = worker_.error_mode();
  params.err_handler.cb = [](void* peer, ucp_ep_h, ucs_status_t status) {
    static_cast<UcxPeer*>(peer)->mark_failed(status);
  };
  params.err_handler.arg = fresh.get();
  ucp_ep_h ep = nullptr;
  ucs_status_t status = ucp_ep_create(worker_.worker(), &params, &ep);
  fresh->ep_ = status == UCS_OK ? ep : nullptr;
  if (status != UCS_OK) {
    raise(Status::kCommunication, ucx_error("cannot reach transport endpoint " + address, status));
  }
  std::shared_ptr<UcxPeer> replaced;  // a failed one cached meanwhile: released outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = peers_.emplace(address, fresh);
  if (!inserted && !it->second->failed()) return it->second;  // another thread connected first
  if (!inserted) replaced = std::exchange(it->second, fresh);
  return fresh;
}

void UcxEndpoints::drop(const std::shared_ptr<UcxPeer>& peer) {
  std::lock_guard<std::mutex> lock(mutex_);  // the caller's `peer` is not the last: none closes
  auto it = peers_.find(peer->address());
  if (it != peers_.end() && it->second == peer) peers_.erase(it);
}

void UcxEndpoints::close_all() {
  // The listener first: closing progresses the worker, which would accept peers still connecting
  // (they would be left open, to be closed after the worker is gone).
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
  listener_ = nullptr;
  const bool worker_gone = worker_.worker() == nullptr;  // it took every endpoint with it
  for (;;) {
    std::map<std::string, std::shared_ptr<UcxPeer>> peers;
    std::map<ucp_ep_h, std::chrono::steady_clock::time_point> accepted;
    std::vector<ucp_ep_h> failed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peers.swap(peers_);
      accepted.swap(accepted_);
      failed.swap(failed_accepted_);
    }
    if (peers.empty() && accepted.empty() && failed.empty()) return;
    if (worker_gone) {
      for (auto& [address, peer] : peers) peer->ep_ = nullptr;
      continue;
    }
    peers.clear();  // each closes its endpoint, flushing what is in flight
    for (ucp_ep_h ep : failed) close_endpoint(worker_, ep, /*force=*/true);
    // Flushed, not forced: a peer whose write landed here must not see the cut before its flush.
    // An endpoint that fails meanwhile goes to failed_accepted_, closed in the next round.
    for (const auto& [ep, since] : accepted) close_endpoint(worker_, ep, /*force=*/false);
  }
}

UcxRemoteKey UcxEndpoints::key_for(const std::shared_ptr<UcxPeer>& peer, uint64_t address,
                                   uint64_t bytes, Deadline deadline) {
  if (auto key = peer->key_for(address, bytes)) return key;
  auto pending = std::make_shared<KeyRequest>();
  pending->peer = peer;
  const auto registration = key_requests_.add(pending);
  peer->send(msg::kRegionRequest,
             msg::encode(msg::RegionRequest{registration.id(), address, bytes}));
  peer->await(key_requests_, *pending, deadline,
              "asking " + peer->address() + " for the remote key of " + base::hex(address));
  auto lock = key_requests_.lock();
  if (!pending->answered) peer->raise_failed(peer->failure());
  if (pending->status != Status::kSuccess) raise(pending->status, pending->message);
  if (address < pending->base || address - pending->base + bytes > pending->size) {
    raise(Status::kCommunication,
          peer->address() + " answered with a region that does not hold " + base::hex(address));
  }
  return pending->key;
}

void UcxEndpoints::take_region_reply(const void* data, size_t length, ucp_ep_h) {
  std::string tail;
  auto reply = msg::decode<msg::RegionReplyHeader>(data, length, &tail);
  if (!reply) return;
  std::shared_ptr<KeyRequest> pending = key_requests_.find(reply->request_id);
  if (!pending) return;  // the requester timed out meanwhile
  Status status = Status::kSuccess;
  std::string message = std::move(tail);  // a refusal's, else the packed key
  UcxRemoteKey key;
  if (reply->status != 0) {
    // kNotSupported: the peer serves no remote keys (use am); an unproven endpoint: the link's.
    status = msg::refusal_status(reply->status, {Status::kCommunication, Status::kNotSupported});
  } else {
    ucp_rkey_h unpacked = nullptr;
    const ucs_status_t unpack = pending->peer->with_ep([&](ucp_ep_h ep) {
      return ep == nullptr ? UCS_ERR_CANCELED : ucp_ep_rkey_unpack(ep, message.data(), &unpacked);
    });
    if (unpack == UCS_OK) {
      key = UcxRemoteKey(unpacked, ucp_rkey_destroy);
      pending->peer->cache_key(reply->base, reply->size, key);
    } else {
      status = Status::kCommunication;
      message = ucx_error("the remote key from " + pending->peer->address(), unpack);
    }
  }
  auto lock = key_requests_.lock();
  pending->status = status;
  pending->message = std::move(message);
  pending->key = std::move(key);
  pending->base = reply->base;
  pending->size = reply->size;
  pending->answered = true;
}

void UcxEndpoints::take_revoke(const void* data, size_t length, ucp_ep_h reply_ep) {
  std::string owner;
  auto revoke = msg::decode<msg::RevokeHeader>(data, length, &owner);
  if (!revoke) return;
  std::shared_ptr<UcxPeer> peer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = peers_.find(owner);
    if (it != peers_.end()) peer = it->second;
  }
  if (peer != nullptr) peer->drop_key(revoke->base);
  msg::send(reply_ep, msg::kRevokeAck, msg::encode(msg::RevokeAck{revoke->revoke_id}),
            /*reply=*/false);
}

}  // namespace memloom::host
