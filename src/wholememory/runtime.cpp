#include "src/wholememory/runtime.h"

#include <cstdlib>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/launcher_detection.h"
#include "src/base/log.h"
#include "src/store/launch_store.h"

namespace memloom::wholememory {
namespace {

// Handle values start high and step by 16 so they look like (and never equal) small integers or
// each other; they are never reused within a process, so a stale handle stays invalid.
constexpr uintptr_t kFirstId = 0x57000;
constexpr uintptr_t kIdStep = 16;

using base::hex;  // handles reach it non-null, so it prints what "%#lx" printed

}  // namespace

Runtime& Runtime::instance() {
  // Never destroyed: tearing down mappings and groups from a static destructor would race with the
  // backend's own static teardown. finalize() releases everything explicitly.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

void Runtime::initialize() {
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_ = true;
}

void Runtime::finalize() {
  std::map<uintptr_t, Allocation> allocations;
  std::map<uintptr_t, std::shared_ptr<Communicator>> comms;
  std::map<std::string, std::shared_ptr<store::Client>> clients;
  std::unique_ptr<store::Server> server;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    allocations.swap(allocations_);
    comms.swap(comms_);
    clients.swap(clients_);
    server.swap(server_);
    initialized_ = false;
  }
  // Outside the lock, in dependency order: memory, then communicators, clients, the store. One
  // deadline for them all, so finalize is bounded by one collective timeout.
  const Deadline deadline = collective_deadline();
  for (auto& [id, allocation] : allocations) retire_memory(std::move(allocation.memory), deadline);
  allocations.clear();
  comms.clear();
  clients.clear();
  server.reset();
}

void Runtime::require_initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!initialized_) raise(Status::kLogic, "wholememory_init has not been called");
}

std::string Runtime::store_url_for_new_id() {
  const base::LaunchInfo launch = base::detect_launch_logged();
  if (!launch.store_url.empty() && !launch.rank0_serves_store) return launch.store_url;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!server_ && launch.rank0_serves_store && launch.rank == 0) {
    // Under torchrun, mpirun or srun nobody runs a store: rank 0 serves it where every rank
    // looks for it, so ids shared through it (memloom_wholememory_share_unique_id) reach all.
    server_ = store::serve_launch_store(launch);
    server_url_ = launch.store_url;
  }
  if (!server_) {
    // Listen where other nodes reach this process (MEMLOOM_HOST_ADDR), loopback by default.
    store::ServerOptions options;
    const char* host = std::getenv("MEMLOOM_HOST_ADDR");
    if (host != nullptr && *host != '\0') {
      const std::string address = host;
      const bool ipv6 = address.find(':') != std::string::npos && address.front() != '[';
      options.listen_url = "tcp://" + (ipv6 ? "[" + address + "]" : address) + ":0";
    }
    server_ = store::Server::start(options);
    server_url_ = server_->url();
    MEMLOOM_LOG(kInfo, "WholeMemory: hosting the config store at " << server_url_);
  }
  return server_url_;
}

std::shared_ptr<store::Client> Runtime::store_client(const std::string& url,
                                                     const std::string& token_hex) {
  store::ClientOptions options;
  if (store::default_job_namespace().empty()) {
    options.job_namespace = "wholememory." + token_hex;
    if (store::default_job_secret().empty()) options.job_secret = token_hex;
  }
  const std::string key =
      url + " " + options.job_namespace.value_or(store::default_job_namespace());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = clients_.find(key);
    if (found != clients_.end() && found->second->connected()) return found->second;
  }
  // Connecting may wait for the store; do not hold the lock meanwhile.
  std::shared_ptr<store::Client> client = store::Client::connect(url, options);
  std::lock_guard<std::mutex> lock(mutex_);
  clients_[key] = client;
  return client;
}

uintptr_t Runtime::next_id_locked() {
  last_id_ = last_id_ == 0 ? kFirstId : last_id_ + kIdStep;
  return last_id_;
}

wholememory_comm_t Runtime::add_comm(std::shared_ptr<Communicator> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t id = next_id_locked();
  comms_.emplace(id, std::move(comm));
  return reinterpret_cast<wholememory_comm_t>(id);
}

std::shared_ptr<Communicator> Runtime::comm(wholememory_comm_t handle) const {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the communicator is null");
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = comms_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == comms_.end()) {
    raise(Status::kInvalidInput,
          "communicator " + hex(reinterpret_cast<uintptr_t>(handle)) +
              " is not a live communicator (destroyed, finalized or garbage)");
  }
  return found->second;
}

void Runtime::remove_comm(wholememory_comm_t handle) {
  std::shared_ptr<Communicator> removed;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = comms_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == comms_.end()) return;
  removed = std::move(found->second);
  comms_.erase(found);
}

wholememory_handle_t Runtime::add_allocation(Allocation allocation) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t id = next_id_locked();
  allocations_.emplace(id, std::move(allocation));
  return reinterpret_cast<wholememory_handle_t>(id);
}

Allocation Runtime::allocation(wholememory_handle_t handle) const {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the WholeMemory handle is null");
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocations_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == allocations_.end()) {
    raise(Status::kInvalidInput, "WholeMemory handle " + hex(reinterpret_cast<uintptr_t>(handle)) +
                                     " is not a live allocation (freed, finalized or garbage)");
  }
  return found->second;
}

MemoryLease Runtime::lease(wholememory_handle_t handle) const {
  Allocation held = allocation(handle);
  // `held` keeps the gate alive; a free that began since the lookup refuses the lease.
  OperationGate::Lease lease = held.memory->gate().enter();
  return MemoryLease(std::move(held), std::move(lease));
}

Allocation Runtime::remove_allocation(wholememory_handle_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = allocations_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == allocations_.end()) {
    raise(Status::kInvalidInput, "WholeMemory handle " + hex(reinterpret_cast<uintptr_t>(handle)) +
                                     " is not a live allocation (freed, finalized or garbage)");
  }
  Allocation removed = std::move(found->second);
  allocations_.erase(found);
  return removed;
}

}  // namespace memloom::wholememory
