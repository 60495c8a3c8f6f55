#include "src/smem/trans/trans_engine.h"

#include <unistd.h>

#include <random>

#include "memloom/error.h"
#include "smem/host/smem_trans_def.h"
#include "src/base/environment.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/core/fd_broker.h"
#include "src/core/platform_loader.h"
#include "src/smem/job_secret.h"
#include "src/smem/trans/endpoint_address.h"
#include "src/smem/trans/staged_copies.h"
#include "src/store/etcd_client.h"
#include "src/store/url.h"

namespace memloom::smem::trans {
namespace {

std::string random_incarnation() {
  std::random_device random;
  uint64_t value =
      (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(::getpid());
  return base::hex(value).substr(2);
}

}  // namespace

Engine::Engine(std::string unique_id, EngineOptions options)
    : unique_id_(std::move(unique_id)), options_(options) {}

std::shared_ptr<Engine> Engine::create(const std::string& store_url, const std::string& unique_id,
                                       const EngineOptions& options) {
  EndpointAddress address = EndpointAddress::parse(unique_id);
  std::shared_ptr<Engine> engine(new Engine(unique_id, options));
  // Holding the name first: it is ours only if its address is.
  engine->name_ = hold_address(address);
  if (options.start_store && store::is_etcd_url(store_url)) {
    store::check_etcd_reachable(store_url, options.timeout);
  } else if (options.start_store) {
    store::ServerOptions server_options;
    server_options.listen_url = store_url;
    engine->store_server_ = store::Server::start(server_options);
  }
  store::ClientOptions client_options;
  client_options.connect_timeout = options.timeout;
  engine->store_ = store::Client::connect(store_url, client_options);
  // The transport serves only ranks that prove the job's secret, and talks only to such ranks. It
  // binds to the uniqueId's IP, which the user chose as reachable by the peers.
  hal::TransportOptions transport_options;
  transport_options.job_secret = load_or_create_job_secret(*engine->store_);
  transport_options.host = address.host;
  try {
    engine->transport_ = core::platform().create_transport(transport_options);
  } catch (const Error& error) {
    // The transport refuses the IPv6 loopback address (UCX 1.13 cannot use it; ucx_transport.cpp).
    // Same-node peers need no transport, so the instance serves them; transfers that would cross
    // nodes fail with this reason.
    if (error.status() != Status::kNotSupported) throw;
    engine->no_transport_why_ = error.what();
    MEMLOOM_LOG(kWarn, "transfer instance " << unique_id
                                            << ": no transfers to other nodes: " << error.what());
  }
  engine->regions_ = std::make_unique<RegionTable>();
  engine->table_token_ = core::FdBroker::instance().publish(engine->regions_->fd());
  PeerRecord record;
  record.node = base::Environment::read().node;
  record.pid = ::getpid();
  record.incarnation = random_incarnation();
  record.role = options.initiates && options.serves ? SMEM_TRANS_BOTH
                : options.serves                    ? SMEM_TRANS_RECEIVER
                                                    : SMEM_TRANS_SENDER;
  record.table_token = engine->table_token_;
  record.transport = engine->transport_ ? engine->transport_->address() : std::string();
  engine->node_ = record.node;
  // Where the CPU cannot address registered memory (CUDA device memory), cross-memory attach
  // cannot reach it: same-node peers copy device memory the owner exported with their streams
  // (DevicePath), and everything else goes through the transport, which stages it.
  if (staging_required()) {
    const int device = options.device >= 0 ? options.device : core::platform().current_device();
    // The first stream (on CUDA, the device's context too) is made now, not in a transfer's time.
    engine->staging_ = std::make_shared<StreamPool>(device);
    engine->staging_forced_ = staging_forced();
    engine->device_domain_ = options.device_domain != nullptr ? options.device_domain
                                                              : &core::platform().memory_domain();
  }
  engine->peers_ = std::make_unique<PeerDirectory>(
      engine->store_, record.node, options.paths.direct, engine->staging_, engine->device_domain_);
  engine->store_->set(peer_key(unique_id), record.encode());
  engine->published_ = true;
  MEMLOOM_LOG(kDebug, "transfer instance " << unique_id << " serves through " << record.transport
                                           << " (incarnation " << record.incarnation << ")");
  return engine;
}

Engine::~Engine() {
  shutdown();
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  // Same-node peers stop at once (closed table); remote ones see their connections close, or,
  // while a transfer of ours still holds the transport, its ranges withdrawn.
  if (regions_) regions_->close();
  std::shared_ptr<hal::Transport> transport;
  std::map<void*, size_t> exposed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    transport.swap(transport_);
    exposed.swap(exposed_);
  }
  if (transport && transport.use_count() > 1) {
    for (const auto& [address, bytes] : exposed) {
      try {
        transport->withdraw(address);
      } catch (const Error& error) {
        MEMLOOM_LOG(kWarn, "transfer instance " << unique_id_ << ": " << error.what());
      }
    }
  }
  transport.reset();
  name_.reset();  // the uniqueId is free for a new instance, even while queued transfers hold us
  if (published_) {
    try {
      store_->remove(peer_key(unique_id_));
    } catch (const Error& error) {
      MEMLOOM_LOG(kWarn,
                  "transfer instance " << unique_id_ << ": cannot unpublish: " << error.what());
    }
  }
  if (!table_token_.empty()) core::FdBroker::instance().withdraw(table_token_);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [address, allocation] : allocations_)
    core::FdBroker::instance().withdraw(allocation.token);
  allocations_.clear();
  for (auto& [address, token] : export_tokens_) core::FdBroker::instance().withdraw(token);
  export_tokens_.clear();
}

void Engine::check_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shut_down_)
    raise(Status::kInvalidInput, "transfer instance '" + unique_id_ + "' was destroyed");
}

std::shared_ptr<hal::Transport> Engine::transport_unless_destroyed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (transport_ == nullptr && no_transport_why_.empty()) {
    raise(Status::kInvalidInput, "transfer instance '" + unique_id_ + "' was destroyed");
  }
  return transport_;
}

std::chrono::milliseconds Engine::hold_wait() const {
  // A copy holds a region for one bounded memcpy or system call; far longer means a dead copier.
  return std::min(options_.timeout, std::chrono::milliseconds(10000));
}

RegionShare Engine::share_device_range(void* address, size_t size) {
  RegionShare share;
  if (!staging_) return share;
  try {
    std::optional<hal::ExportedSegment> exported =
        device_domain_->export_device_range(address, size);
    if (!exported) {
      // Host memory stays plain: same-node peers reach it by cross-memory attach. Device memory
      // over several allocations has no export: only the transport copies it.
      if (is_device_memory(address)) share.kind = RegionKind::kDeviceOpaque;
      return share;
    }
    base::UniqueFd fd(exported->fd);
    if (exported->descriptor.size() > kMaxDescriptorBytes) {
      raise(Status::kNotSupported, "its descriptor of " +
                                       std::to_string(exported->descriptor.size()) +
                                       " bytes does not fit a region slot");
    }
    share.kind = RegionKind::kDeviceExport;
    share.descriptor = std::move(exported->descriptor);
    if (fd.valid()) share.token = core::FdBroker::instance().publish(fd.get());
  } catch (const Error& error) {
    // Peers still reach the memory through the transport, as before exports existed.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!export_failure_logged_) {
      export_failure_logged_ = true;
      MEMLOOM_LOG(kInfo, "transfer instance "
                             << unique_id_ << ": device memory cannot be exported to peers ("
                             << error.what() << "); they use the transport for it");
    }
    RegionShare unexported;
    unexported.kind = RegionKind::kDeviceOpaque;
    return unexported;
  }
  return share;
}

void Engine::register_memory(const std::vector<std::pair<void*, size_t>>& ranges) {
  check_open();
  std::vector<void*> added;
  try {
    for (const auto& [address, bytes] : ranges) {
      auto start = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address));
      RegionShare share = share_device_range(address, bytes);
      bool fresh = false;
      try {
        fresh = regions_->add(start, bytes, share);
      } catch (...) {
        if (!share.token.empty()) core::FdBroker::instance().withdraw(share.token);
        throw;
      }
      if (!fresh) {
        if (!share.token.empty()) core::FdBroker::instance().withdraw(share.token);
        continue;
      }
      added.push_back(address);
      try {
        expose(address, bytes);
      } catch (...) {
        added.pop_back();
        regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
        if (!share.token.empty()) core::FdBroker::instance().withdraw(share.token);
        throw;
      }
      if (!share.token.empty()) {
        std::lock_guard<std::mutex> lock(mutex_);
        export_tokens_[address] = share.token;
      }
    }
  } catch (...) {
    for (void* address : added) {
      withdraw(address);
      regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
      withdraw_export(address);
    }
    throw;
  }
}

void Engine::expose(void* address, size_t bytes) {
  if (!options_.serves) return;  // a SENDER's memory is no transfer target
  const std::shared_ptr<hal::Transport> transport = transport_unless_destroyed();
  if (!transport) return;  // nothing serves other nodes
  transport->expose(address, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  exposed_.emplace(address, bytes);
}

// Returns once no transfer of a peer uses the range (the transport's withdraw waits for them).
void Engine::withdraw(void* address) {
  std::shared_ptr<hal::Transport> transport;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (exposed_.erase(address) == 0) return;
    transport = transport_;
  }
  if (transport) transport->withdraw(address);
}

void Engine::withdraw_export(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = export_tokens_.find(address);
  if (it == export_tokens_.end()) return;
  core::FdBroker::instance().withdraw(it->second);
  export_tokens_.erase(it);
}

void Engine::deregister_memory(void* address) {
  check_open();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (allocations_.count(address) != 0) {
      raise(Status::kInvalidInput,
            "memory from smem_trans_malloc is released with smem_trans_free");
    }
  }
  withdraw(address);  // nothing when no region starts there: remove() says so
  regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
  // Peers that imported the range keep their mapping until they see it gone from the table.
  withdraw_export(address);
}

void* Engine::allocate(size_t bytes) {
  check_open();
  Allocation allocation{ShareableHostMemory::allocate(bytes), "", bytes};
  void* base = allocation.segment->base();
  allocation.token = core::FdBroker::instance().publish(allocation.segment->fd());
  try {
    regions_->add(reinterpret_cast<uintptr_t>(base), bytes,
                  RegionShare{RegionKind::kMemfd, allocation.token, {}});
  } catch (...) {
    core::FdBroker::instance().withdraw(allocation.token);
    throw;
  }
  try {
    expose(base, bytes);
  } catch (...) {
    regions_->remove(reinterpret_cast<uintptr_t>(base), hold_wait());
    core::FdBroker::instance().withdraw(allocation.token);
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.emplace(base, std::move(allocation));
  return base;
}

void Engine::release(void* address) {
  check_open();
  std::string token;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(address);
    if (it == allocations_.end()) {
      raise(Status::kInvalidInput, base::hex(address) +
                                       " was not returned by smem_trans_malloc of '" + unique_id_ +
                                       "' (or was freed already)");
    }
    token = it->second.token;
  }
  withdraw(address);
  regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
  core::FdBroker::instance().withdraw(token);
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.erase(address);
}

void Engine::check_initiator() const {
  if (!options_.initiates) {
    raise(Status::kNotSupported,
          "transfer instance '" + unique_id_ +
              "' has role SMEM_TRANS_RECEIVER: it serves its memory but does not "
              "initiate reads or writes (use SMEM_TRANS_SENDER or SMEM_TRANS_BOTH)");
  }
}

void Engine::check_peer(const std::string& peer_id) {
  check_open();
  peers_->find(peer_id, deadline());
}

bool Engine::is_device_memory(const void* address) const {
  return staging_forced_ || device_domain_->is_device_memory(address);
}

bool Engine::local_side_is_host(const std::vector<TransferEntry>& entries) const {
  // Without staging every address is host memory; with it, device buffers need the streams.
  if (!staging_) return true;
  for (const auto& entry : entries) {
    if (entry.bytes > 0 && is_device_memory(entry.local)) return false;
  }
  return true;
}

void Engine::transfer(Direction direction, const std::string& peer_id,
                      const std::vector<TransferEntry>& entries) {
  check_open();
  check_initiator();
  const Deadline deadline = this->deadline();
  std::vector<Piece> pieces;
  pieces.reserve(entries.size());
  for (const auto& entry : entries) {
    append_pieces(pieces, entry.local, entry.remote, entry.bytes, kMaxPieceBytes);
  }
  std::shared_ptr<Peer> peer = peers_->find(peer_id, deadline);
  if (peer->record.role == SMEM_TRANS_SENDER) {
    raise(Status::kNotSupported,
          "peer '" + peer_id + "' has role SMEM_TRANS_SENDER: its memory is not a transfer target");
  }
  try {
    if (peer->device &&
        peer->device->run(direction, pieces, deadline) == DevicePath::Outcome::kDone) {
      return;
    }
    if (peer->direct && !peer->cross_memory_denied.load() && local_side_is_host(entries)) {
      const DirectPath::Outcome outcome = peer->direct->run(direction, pieces, deadline);
      if (outcome == DirectPath::Outcome::kDone) return;
      if (outcome == DirectPath::Outcome::kCrossMemoryDenied) {
        peer->cross_memory_denied.store(true);
        MEMLOOM_LOG(kInfo, "cross-memory attach to peer '"
                               << peer_id
                               << "' is not permitted (ptrace restrictions); using the "
                                  "transport for it");
      }
    }
    // With staging, the transport is how same-node copies are done (SDMA's stand-in).
    const bool same_node = peer->record.node == node_;
    const bool tcp_allowed =
        options_.paths.network || (staging_ && same_node && options_.paths.direct);
    if (!tcp_allowed) {
      // Without a network path the direct one is allowed (dataOpType is never empty).
      std::string why =
          same_node ? "cross-memory attach is not permitted" : "it is on another node";
      raise(Status::kNotSupported,
            "peer '" + peer_id + "' needs the network path (" + why +
                ") but dataOpType has none of HOST_TCP, HOST_RDMA, HOST_URMA, DEVICE_RDMA");
    }
    transfer_by_transport(direction, peer_id, peer->record, entries, deadline);
  } catch (const Error& error) {
    // The peer may have died: read it from the store again next time, in case it restarted.
    if (error.status() == Status::kCommunication || error.status() == Status::kTimeout) {
      peers_->forget(peer_id, peer);
    }
    throw;
  }
}

void Engine::transfer_by_transport(Direction direction, const std::string& peer_id,
                                   const PeerRecord& peer,
                                   const std::vector<TransferEntry>& entries, Deadline deadline) {
  const std::shared_ptr<hal::Transport> transport = transport_unless_destroyed();
  if (!transport) {
    raise(Status::kNotSupported,
          "transfer instance '" + unique_id_ + "' cannot reach peer '" + peer_id +
              "' (not on this node, or not by a same-node path): " + no_transport_why_);
  }
  const std::string mine = transport->address();
  const std::string theirs = peer.transport;
  if (theirs.empty()) {
    raise(Status::kNotSupported, "peer '" + peer_id +
                                     "' has no transport to other nodes (its uniqueId's address, "
                                     "such as the IPv6 loopback ::1, is one the UCX transport "
                                     "cannot serve); it is reachable only by same-node paths");
  }
  if (mine.substr(0, mine.find("://")) != theirs.substr(0, theirs.find("://"))) {
    raise(Status::kNotSupported,
          "peer '" + peer_id + "' uses the transport " + theirs + ", this instance " + mine +
              ": a job's processes must all run memloom with the same transport");
  }
  std::vector<hal::TransferOp> ops;
  ops.reserve(entries.size());
  const auto kind = direction == Direction::kRead ? hal::TransferOp::Direction::kRead
                                                  : hal::TransferOp::Direction::kWrite;
  for (const auto& entry : entries) ops.push_back({kind, entry.remote, entry.local, entry.bytes});
  try {
    transport->transfer(theirs, ops, deadline);
  } catch (const Error& error) {
    // The transport refuses a range its owner has not exposed (registered) with kInvalidInput.
    if (error.status() == Status::kInvalidInput) {
      raise(Status::kInvalidInput, "peer '" + peer_id +
                                       "' refused the transfer: a range is not inside memory "
                                       "registered by '" +
                                       peer_id + "' (" + error.what() + ")");
    }
    if (error.status() == Status::kInterrupted) throw;
    raise(error.status(), "transfer with peer '" + peer_id + "': " + error.what());
  }
}

}  // namespace memloom::smem::trans
