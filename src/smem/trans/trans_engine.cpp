#include "src/smem/trans/trans_engine.h"

#include <unistd.h>

#include <random>

#include "memloom/error.h"
#include "smem/host/smem_trans_def.h"
#include "src/core/environment.h"
#include "src/core/fd_broker.h"
#include "src/core/log.h"
#include "src/core/platform_loader.h"
#include "src/smem/trans/hex_address.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/wire_format.h"

namespace memloom::smem::trans {
namespace {

std::string random_incarnation() {
  std::random_device random;
  uint64_t value =
      (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(::getpid());
  return hex_address(value).substr(2);
}

}  // namespace

Engine::Engine(std::string unique_id, EngineOptions options)
    : unique_id_(std::move(unique_id)), options_(options) {}

std::shared_ptr<Engine> Engine::create(const std::string& store_url, const std::string& unique_id,
                                       const EngineOptions& options) {
  EndpointAddress address = EndpointAddress::parse(unique_id);
  std::shared_ptr<Engine> engine(new Engine(unique_id, options));
  if (options.start_store) {
    store::ServerOptions server_options;
    server_options.listen_url = store_url;
    engine->store_server_ = store::Server::start(server_options);
  }
  store::ClientOptions client_options;
  client_options.connect_timeout = options.timeout;
  engine->store_ = store::Client::connect(store_url, client_options);
  // Listening first: the name is ours only if its address is, and a published instance must be
  // reachable at once.
  UniqueFd listener = listen_on(address);
  engine->regions_ = std::make_unique<RegionTable>();
  engine->table_token_ = core::FdBroker::instance().publish(engine->regions_->fd());
  PeerRecord record;
  record.node = core::Environment::read().node;
  record.pid = ::getpid();
  record.incarnation = random_incarnation();
  record.role = options.initiates && options.serves ? SMEM_TRANS_BOTH
                : options.serves                    ? SMEM_TRANS_RECEIVER
                                                    : SMEM_TRANS_SENDER;
  record.table_token = engine->table_token_;
  engine->node_ = record.node;
  // Where the CPU cannot address registered memory (CUDA device memory), bytes go through host
  // buffers and the data server even inside a node: cross-memory attach cannot reach the device.
  if (staging_required()) {
    engine->staging_device_ =
        options.device >= 0 ? options.device : core::platform().current_device();
  }
  const bool staged = engine->staging_device_ >= 0;
  engine->server_ = std::make_unique<DataServer>(
      std::move(listener), ServerIdentity{unique_id, record.incarnation, options.serves},
      *engine->regions_, options.timeout, engine->staging_device_);
  engine->peers_ = std::make_unique<PeerDirectory>(
      engine->store_, record.node, options.paths.direct && !staged, engine->staging_device_);
  engine->store_->set(peer_key(unique_id), record.encode());
  engine->published_ = true;
  MEMLOOM_LOG(kDebug, "transfer instance " << unique_id << " serves on " << unique_id
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
  // Same-node peers stop at once (closed table); remote ones see their connections close.
  if (regions_) regions_->close();
  if (server_) server_->stop();
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
}

void Engine::check_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shut_down_)
    raise(Status::kInvalidInput, "transfer instance '" + unique_id_ + "' was destroyed");
}

std::chrono::milliseconds Engine::hold_wait() const {
  // A copy holds a region for one bounded memcpy or system call; far longer means a dead copier.
  return std::min(options_.timeout, std::chrono::milliseconds(10000));
}

void Engine::register_memory(const std::vector<std::pair<void*, size_t>>& ranges) {
  check_open();
  std::vector<void*> added;
  try {
    for (const auto& [address, bytes] : ranges) {
      auto start = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address));
      if (regions_->add(start, bytes, "")) added.push_back(address);
    }
  } catch (...) {
    for (void* address : added) regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
    throw;
  }
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
  regions_->remove(reinterpret_cast<uintptr_t>(address), hold_wait());
}

void* Engine::allocate(size_t bytes) {
  check_open();
  Allocation allocation{MemfdSegment::allocate(bytes), "", bytes};
  void* base = allocation.segment->base();
  allocation.token = core::FdBroker::instance().publish(allocation.segment->fd());
  try {
    regions_->add(reinterpret_cast<uintptr_t>(base), bytes, allocation.token);
  } catch (...) {
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
      raise(Status::kInvalidInput, hex_address(address) +
                                       " was not returned by smem_trans_malloc of '" + unique_id_ +
                                       "' (or was freed already)");
    }
    token = it->second.token;
  }
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

void Engine::transfer(Direction direction, const std::string& peer_id,
                      const std::vector<TransferEntry>& entries) {
  check_open();
  check_initiator();
  const Deadline deadline = this->deadline();
  std::vector<Piece> pieces;
  pieces.reserve(entries.size());
  for (const auto& entry : entries) {
    append_pieces(pieces, entry.local, entry.remote, entry.bytes, wire::kMaxPieceBytes);
  }
  std::shared_ptr<Peer> peer = peers_->find(peer_id, deadline);
  if (peer->record.role == SMEM_TRANS_SENDER) {
    raise(Status::kNotSupported,
          "peer '" + peer_id + "' has role SMEM_TRANS_SENDER: its memory is not a transfer target");
  }
  try {
    if (peer->direct && !peer->cross_memory_denied.load()) {
      if (peer->direct->run(direction, pieces, deadline) == DirectPath::Outcome::kDone) return;
      peer->cross_memory_denied.store(true);
      MEMLOOM_LOG(kInfo, "cross-memory attach to peer '"
                             << peer_id
                             << "' is not permitted (ptrace restrictions); using TCP for it");
    }
    // With staging, the data server is how same-node copies are done (SDMA's stand-in).
    const bool same_node = peer->record.node == node_;
    const bool tcp_allowed =
        options_.paths.network || (staging_device_ >= 0 && same_node && options_.paths.direct);
    if (!tcp_allowed) {
      // Without a network path the direct one is allowed (dataOpType is never empty).
      std::string why =
          same_node ? "cross-memory attach is not permitted" : "it is on another node";
      raise(Status::kNotSupported,
            "peer '" + peer_id + "' needs the network path (" + why +
                ") but dataOpType has none of HOST_TCP, HOST_RDMA, HOST_URMA, DEVICE_RDMA");
    }
    peer->tcp.run(direction, pieces, deadline);
  } catch (const Error& error) {
    // The peer may have died: read it from the store again next time, in case it restarted.
    if (error.status() == Status::kCommunication || error.status() == Status::kTimeout) {
      peers_->forget(peer_id, peer);
    }
    throw;
  }
}

}  // namespace memloom::smem::trans
