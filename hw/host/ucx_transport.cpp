#include "hw/host/ucx_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "hw/host/host_address.h"
#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_transfer_order.h"
#include "src/base/log.h"
#include "src/base/tcp_address.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;
using Direction = hal::TransferOp::Direction;

constexpr std::string_view kScheme = "ucx://";

// The pool's buffers (UcxAmRequests::kChunkBytes each): a requester's window of messages in flight
// and a few the serving side stages at once.
constexpr size_t kPooledStagingBuffers = 16;
// How long a closing transport, or a failed batch, waits for UCX to hand back requests.
constexpr auto kReleaseTimeout = std::chrono::seconds(2);

base::TcpAddress parse_address(const std::string& text) {
  MEMLOOM_CHECK_ARG(text.rfind(kScheme, 0) == 0,
                    "transport address '" + text + "' is not ucx://IP:PORT");
  base::TcpAddressRules rules;
  rules.scheme = false;
  rules.either_family = true;
  const base::ParsedTcpAddress parsed =
      base::parse_tcp_address(std::string_view(text).substr(kScheme.size()), rules);
  MEMLOOM_CHECK_ARG(parsed.fault == base::TcpAddressFault::kNone,
                    "transport address '" + text + "' is not ucx://IP:PORT");
  return parsed.address;
}

std::string format_address(const std::string& host, uint16_t port) {
  return std::string(kScheme) + base::format_tcp_url(host, port).substr(std::strlen("tcp://"));
}

bool is_ipv6_literal(const std::string& host) {
  return host.find(':') != std::string::npos;
}

// UCX 1.13 serves IPv6 only where its TCP interfaces have IPv6 addresses too (UcxWorker sets
// UCX_TCP_AF_PRIO=inet6 where unset): with IPv4 interface addresses the server endpoint of a peer
// that connected over IPv6 reads an IPv6 address out of an IPv4 one (AddressSanitizer:
// heap-buffer-overflow in ucs_sockaddr_get_ipstr under ucp_ep_create) and the process later aborts
// in glibc ("double free or corruption"). Nor does its TCP transport use the loopback device over
// IPv6 ("device lo is not enabled"), so ::1 reaches no peer. Both are refused here, naming why.
void check_ipv6_host(const std::string& host) {
  in6_addr address{};
  if (::inet_pton(AF_INET6, host.c_str(), &address) == 1 && IN6_IS_ADDR_LOOPBACK(&address)) {
    raise(Status::kNotSupported,
          "the UCX transport cannot serve the IPv6 loopback address (" + host +
              "): UCX 1.13's TCP transport does not use the loopback device over IPv6; use "
              "127.0.0.1 or an IPv6 address of a network interface (MEMLOOM_HOST_ADDR, or the "
              "TRANS uniqueId)");
  }
  const char* priority = std::getenv("UCX_TCP_AF_PRIO");
  if (priority != nullptr && std::string(priority).rfind("inet6", 0) != 0) {
    raise(Status::kNotSupported,
          "the UCX transport on an IPv6 address (" + host +
              ") needs UCX_TCP_AF_PRIO to put inet6 first (it is '" + priority +
              "'): UCX 1.13 corrupts memory when a peer that connected over IPv6 meets IPv4 "
              "interface addresses");
  }
}

// UCX 1.13's new protocols (UCX_PROTO_ENABLE=y; off by default in 1.13) abort the process once an
// endpoint of the listener connects ("proto_reconfig.c:53 Assertion `!(ep->flags &
// UCP_EP_FLAG_REMOTE_CONNECTED)'", seen in 5 of the 6 PlatformTransport tests): refused, naming
// why.
void check_protocol_setting() {
  const char* value = std::getenv("UCX_PROTO_ENABLE");
  if (value == nullptr) return;
  std::string lowered(value);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool on =
      lowered == "y" || lowered == "yes" || lowered == "on" || lowered == "1" || lowered == "true";
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (on && major == 1 && minor == 13) {
    raise(Status::kNotSupported,
          std::string("UCX_PROTO_ENABLE=") + value + ": UCX " + std::to_string(major) + "." +
              std::to_string(minor) + "." + std::to_string(release) +
              "'s new protocols abort the process on the transport's connections; unset it "
              "(UCX 1.13's default)");
  }
}

// MEMLOOM_TRANSPORT chose memloom's own TCP transport, now gone: a job that sets it is told once.
void warn_if_transport_variable_set() {
  static std::atomic<bool> warned{false};
  const char* value = std::getenv("MEMLOOM_TRANSPORT");
  if (value == nullptr || warned.exchange(true)) return;
  MEMLOOM_LOG(kWarn, "MEMLOOM_TRANSPORT=" << value
                                          << " is no longer read: data between nodes always goes "
                                             "through the UCX transport (UCX_TLS=tcp keeps it on "
                                             "TCP)");
}

// The rma data path: one transfer() call's ops issued as ucp_put_nbx/ucp_get_nbx without waiting,
// then one endpoint flush, so a batch of small ops costs one round trip; an op that must wait
// (ucx_transfer_order.h) waits for a flush. After a failure the endpoint is closed by force
// (UcxPeer::force_close), so that UCX lets go of the caller's buffers.
class TransferBatch {
 public:
  TransferBatch(UcxWorker& worker, UcxPeer& peer)
      : worker_(worker), peer_(peer), completion_(new UcxRequestCount(peer.in_flight())) {
    param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param_.cb.send = done;
    param_.user_data = completion_;
  }

  // Waits (briefly) for requests left in flight after a failure.
  ~TransferBatch() {
    if (worker_.progress_until([this] { return completion_->outstanding.load() == 0; },
                               Deadline::after(kReleaseTimeout))) {
      delete completion_;
    } else {  // UCX may still call back into it: leaking a few bytes beats a use after free
      MEMLOOM_LOG(kError, "transport: UCX did not release a failed transfer's requests");
    }
  }

  // Issues every op (`keys[i]` for `work[i]`), then flushes; false at the deadline or on a failure.
  bool run(const std::vector<const hal::TransferOp*>& work, const std::vector<UcxRemoteKey>& keys,
           Deadline deadline) {
    UcxTransferOrder order(work);
    for (size_t i = 0; i < work.size(); ++i) {
      const hal::TransferOp& op = *work[i];
      if (order.must_wait(op)) {
        if (!complete(deadline)) return false;
        order.restart();
      }
      order.add(op);
      const ucp_rkey_h key = keys[i].get();
      const bool issued = track(peer_.on_ep([&](ucp_ep_h ep) {
        return op.direction == Direction::kWrite
                   ? ucp_put_nbx(ep, op.local_address, op.bytes, op.remote_address, key, &param_)
                   : ucp_get_nbx(ep, op.local_address, op.bytes, op.remote_address, key, &param_);
      }));
      if (!issued) return false;
    }
    return complete(deadline);
  }

  // After the call gave up: the first error of an op or flush, else the endpoint's, else UCS_OK.
  ucs_status_t abandon() {
    ucs_status_t why = completion_->first_error.load();
    if (why == UCS_OK && peer_.failed()) why = peer_.failure();
    peer_.force_close();
    return why;
  }

 private:
  static void done(void* request, ucs_status_t status, void* user_data) {
    auto* completion = static_cast<UcxRequestCount*>(user_data);
    if (status != UCS_OK) completion->fail(status);
    ucp_request_free(request);
    completion->ended();
  }

  // Flushes the endpoint and waits for every op; false at the deadline or on a failure.
  bool complete(Deadline deadline) {
    if (!track(peer_.on_ep([this](ucp_ep_h ep) { return ucp_ep_flush_nbx(ep, &param_); }))) {
      return false;
    }
    const bool finished = worker_.progress_until(
        [this] {
          return completion_->outstanding.load() == 0 || completion_->first_error.load() != UCS_OK;
        },
        deadline, UcxWorker::Interruptible::kYes);
    return finished && completion_->first_error.load() == UCS_OK;
  }

  bool track(ucs_status_ptr_t request) {
    if (UCS_PTR_IS_ERR(request)) {
      completion_->fail(UCS_PTR_STATUS(request));
      return false;
    }
    if (request != nullptr) completion_->started();  // null: completed at once
    return completion_->first_error.load() == UCS_OK;
  }

  UcxWorker& worker_;
  UcxPeer& peer_;
  UcxRequestCount* completion_;  // shared with UCX's callbacks; leaked if they never come
  ucp_request_param_t param_{};  // every request's: done() with completion_
};

}  // namespace

UcxDataPath chosen_ucx_data_path() {
  const char* value = std::getenv("MEMLOOM_UCX_DATA_PATH");
  const std::string path = value == nullptr ? "" : value;
  if (path.empty() || path == "auto") {
    return ucx_offers_rdma() ? UcxDataPath::kRma : UcxDataPath::kAm;
  }
  if (path == "am") return UcxDataPath::kAm;
  if (path == "rma") return UcxDataPath::kRma;
  raise(Status::kInvalidInput,
        "MEMLOOM_UCX_DATA_PATH=" + path + " is not a UCX data path (auto, am or rma)");
}

UcxTransport::UcxTransport(const hal::TransportOptions& options,
                           std::unique_ptr<BufferStaging> staging)
    : stages_device_memory_(staging != nullptr),
      staging_(stages_device_memory_ ? std::move(staging) : std::make_unique<HostMemoryStaging>()),
      pool_(std::make_shared<StagingBufferPool>(*staging_, UcxAmRequests::kChunkBytes,
                                                kPooledStagingBuffers)),
      data_path_(chosen_ucx_data_path()),
      serves_rma_(data_path_ == UcxDataPath::kRma || ucx_offers_rdma()),
      host_(options.host.empty() ? host_address() : options.host),
      worker_(serves_rma_, is_ipv6_literal(host_)),
      gate_(worker_, options.job_secret),
      regions_(worker_, gate_, serves_rma_, *staging_),
      am_server_(worker_, regions_, gate_, pool_),
      am_requests_(worker_, pool_, stages_device_memory_),
      endpoints_(
          worker_,
          [this](ucp_ep_h ep) {
            gate_.forget(ep);
            regions_.forget_holder(ep);
            am_server_.endpoint_failed(ep);
          },
          [this](ucp_ep_h ep) { return gate_.admitted(ep); }) {
  const std::pair<unsigned, msg::Handler> taken[] = {
      {msg::kRegionRequest, dispatch<&UcxTransport::regions_, &UcxRegionRegistry::answer_request>},
      {msg::kRegionReply, dispatch<&UcxTransport::endpoints_, &UcxEndpoints::take_region_reply>},
      {msg::kRevoke, dispatch<&UcxTransport::endpoints_, &UcxEndpoints::take_revoke>},
      {msg::kRevokeAck, dispatch<&UcxTransport::regions_, &UcxRegionRegistry::take_ack>},
      {msg::kHello, dispatch<&UcxTransport::gate_, &UcxJobGate::take_hello>},
      {msg::kChallenge, dispatch<&UcxTransport::gate_, &UcxJobGate::take_challenge>},
      {msg::kProof, dispatch<&UcxTransport::gate_, &UcxJobGate::take_proof>},
      {msg::kVerdict, dispatch<&UcxTransport::gate_, &UcxJobGate::take_verdict>}};
  static_assert(sizeof(taken) / sizeof(taken[0]) == std::tuple_size_v<decltype(handlers_)>);
  for (size_t i = 0; i < handlers_.size(); ++i) {
    handlers_[i] = {taken[i].second, this};
    msg::set_handler(worker_.worker(), taken[i].first, &handlers_[i]);
  }
  warn_if_transport_variable_set();
  check_protocol_setting();
  if (is_ipv6_literal(host_)) check_ipv6_host(host_);
  address_ = format_address(host_, endpoints_.listen(host_));
  regions_.set_own_address(address_);
  am_server_.set_own_address(address_);
  gate_.set_own_address(address_);
  worker_.start_progress_thread([this] { endpoints_.close_unproven(); });
  MEMLOOM_LOG(kDebug, "transport "
                          << address_ << ": UCX data path " << ucx_data_path_name(data_path_)
                          << " (MEMLOOM_UCX_DATA_PATH)"
                          << (stages_device_memory_ ? ", device memory staged on am" : ""));
}

UcxTransport::~UcxTransport() {
  worker_.stop_progress_thread();
  endpoints_.close_all();
  // A call that gave up, or a reply to a requester that did, may have left UCX a request; without
  // peer error handling UCX may keep one queued for good on a stopped peer.
  auto held = [this] { return am_requests_.requests_held() + am_server_.requests_held(); };
  if (!worker_.progress_until([&] { return held() == 0; }, Deadline::after(kReleaseTimeout))) {
    MEMLOOM_LOG(kError, "transport " << address_ << ": UCX still holds " << held()
                                     << " request(s) with a peer that stopped answering; the UCX "
                                        "worker is left open until the process exits (destroying "
                                        "it would abort the process)");
    worker_.keep_open_at_destruction();
    return;
  }
  // Endpoints that failed while it waited.
  endpoints_.close_all();
  // Now, while every object its callbacks reach lives: UCX may still end receives it had never
  // ended (abandoned, ucx_am_server.h) here; after this it calls nothing of ours. The regions go
  // first: UCX 1.16 hands the unmapping of memory such a receive still uses to the worker's
  // progress (unmapped after the worker, the process hung in ucs_callbackq_add_oneshot).
  regions_.unmap_all();
  worker_.destroy_worker();
}

void UcxTransport::transfer(const std::string& peer_address,
                            const std::vector<hal::TransferOp>& ops, Deadline deadline) {
  std::vector<const hal::TransferOp*> work;
  for (const auto& op : ops) {
    MEMLOOM_CHECK_ARG(
        op.bytes == 0 || op.local_address != nullptr,
        "transfer: an op of " + std::to_string(op.bytes) + " bytes has no local address");
    MEMLOOM_CHECK_ARG(op.direction == Direction::kRead || op.direction == Direction::kWrite,
                      "transfer: unknown direction");
    MEMLOOM_CHECK_ARG(op.remote_address + op.bytes >= op.remote_address,
                      "transfer: the remote range wraps around the address space");
    if (op.bytes > 0) work.push_back(&op);
  }
  const base::TcpAddress where = parse_address(peer_address);  // malformed: the caller's fault
  if (work.empty()) return;
  std::shared_ptr<UcxPeer> peer = endpoints_.peer(peer_address, where.host, where.port, deadline);
  try {
    run(peer, work, deadline);
  } catch (const Error& error) {
    // A refusal leaves the endpoint as it was; anything else, an interruption too, unknown or
    // dead: the next transfer to this peer gets a new one.
    if (error.status() != Status::kInvalidInput) {
      if (error.status() == Status::kTimeout || error.status() == Status::kInterrupted)
        peer->force_close();
      endpoints_.drop(peer);
    }
    throw;
  }
}

void UcxTransport::run(const std::shared_ptr<UcxPeer>& peer,
                       const std::vector<const hal::TransferOp*>& work, Deadline deadline) {
  const UcxWorker::CallerScope caller(worker_);
  gate_.prove_to(peer, deadline);
  // Staged memory must not reach UCX, nor any without peer error handling (ucx_am_requests.h).
  bool am = data_path_ == UcxDataPath::kAm || worker_.error_mode() == UCP_ERR_HANDLING_MODE_NONE;
  for (size_t i = 0; !am && i < work.size(); ++i) {
    am = staging_->needs_staging(work[i]->local_address);
  }
  if (!am) {
    std::lock_guard<std::mutex> lock(am_only_mutex_);
    am = am_only_peers_.count(peer->address()) != 0;
  }
  if (am) return am_requests_.run(peer, work, deadline);
  // Every key first: a range the peer refuses fails the call before any byte moves.
  std::vector<UcxRemoteKey> keys;
  try {
    for (const hal::TransferOp* op : work) {
      keys.push_back(endpoints_.key_for(peer, op->remote_address, op->bytes, deadline));
    }
  } catch (const Error& error) {
    if (error.status() != Status::kNotSupported) throw;
    // The peer serves only am (no RDMA transport), or stages the range: am from now on; no byte
    // has moved yet.
    MEMLOOM_LOG(kInfo, "transport " << address_ << ": " << error.what() << "; using am for it");
    {
      std::lock_guard<std::mutex> lock(am_only_mutex_);
      am_only_peers_.insert(peer->address());
    }
    return am_requests_.run(peer, work, deadline);
  }
  TransferBatch batch(worker_, *peer);
  bool completed = false;
  try {
    completed = batch.run(work, keys, deadline);
  } catch (const Error&) {
    batch.abandon();  // interrupted by the caller: nothing else throws here
    throw;
  }
  if (!completed) peer->raise_failed(batch.abandon());
}

}  // namespace memloom::host
