// The process-wide state behind the WholeMemory C API: whether it is initialised, the config store
// this process hosts, one store client per store, and the registries that turn opaque C handles
// into objects. Handles are registry ids, never pointers, so a freed or garbage handle is
// recognised and refused instead of being dereferenced.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/store/client.h"
#include "src/store/server.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/memory_handle.h"
#include "wholememory/wholememory.h"

namespace memloom::wholememory {

// A live allocation and the communicator handles it hands out.
struct Allocation {
  std::shared_ptr<MemoryHandle> memory;
  wholememory_comm_t comm = nullptr;        // the communicator passed to wholememory_malloc
  wholememory_comm_t local_comm = nullptr;  // HIERARCHY only
  wholememory_comm_t cross_comm = nullptr;  // HIERARCHY only
};

// An allocation held for one operation: while the lease lives, wholememory_free and
// wholememory_finalize wait instead of unmapping the memory (operation_gate.h).
class MemoryLease {
 public:
  MemoryLease(Allocation allocation, OperationGate::Lease lease)
      : lease_(std::move(lease)), allocation_(std::move(allocation)) {}

  const Allocation& allocation() const { return allocation_; }
  const std::shared_ptr<MemoryHandle>& memory() const { return allocation_.memory; }
  MemoryHandle* operator->() const { return allocation_.memory.get(); }
  MemoryHandle& operator*() const { return *allocation_.memory; }

 private:
  // Declared first, so returned last: when a closing gate sees its leases back, their references
  // to the memory are gone too, and the closer's reference is the one that unmaps it.
  OperationGate::Lease lease_;
  Allocation allocation_;
};

class Runtime {
 public:
  static Runtime& instance();

  void initialize();
  // Drops every allocation and communicator of this process (locally) and stops the hosted store.
  // Allocations go as in wholememory_free: after the operations using them (retire_memory).
  void finalize();
  // Throws kLogic when wholememory_init has not been called.
  void require_initialized() const;

  // The store a new unique id names: MEMLOOM_STORE_URL, else a store this process starts (once)
  // at MEMLOOM_HOST_ADDR (default 127.0.0.1), any free port, and keeps until finalize.
  std::string store_url_for_new_id();
  // A connection to the store at `url` for the communicators of the unique id whose token is
  // `token_hex` (one per store and job namespace, shared by those communicators). When no launcher
  // names the job (store::default_job_namespace() is ""), the unique id does: its random token,
  // which only the job's ranks hold, names the namespace and, unless MEMLOOM_JOB_SECRET is set,
  // serves as the job secret, so other clients of the store can neither see nor join it.
  std::shared_ptr<store::Client> store_client(const std::string& url, const std::string& token_hex);

  wholememory_comm_t add_comm(std::shared_ptr<Communicator> comm);
  // Throws kInvalidInput for a handle that is not a live communicator.
  std::shared_ptr<Communicator> comm(wholememory_comm_t handle) const;
  void remove_comm(wholememory_comm_t handle);

  wholememory_handle_t add_allocation(Allocation allocation);
  // Throws kInvalidInput for a handle that is not a live allocation.
  Allocation allocation(wholememory_handle_t handle) const;
  // The allocation, held for one operation; kInvalidInput also while it is being freed.
  MemoryLease lease(wholememory_handle_t handle) const;
  // Unregisters the allocation (later lookups fail) and returns it; kInvalidInput when not live.
  Allocation remove_allocation(wholememory_handle_t handle);

 private:
  Runtime() = default;
  uintptr_t next_id_locked();

  mutable std::mutex mutex_;
  bool initialized_ = false;
  std::unique_ptr<store::Server> server_;
  std::string server_url_;  // what ids name it by: a launcher's host name, or the bound address
  std::map<std::string, std::shared_ptr<store::Client>> clients_;  // by url and namespace
  uintptr_t last_id_ = 0;
  std::map<uintptr_t, std::shared_ptr<Communicator>> comms_;
  std::map<uintptr_t, Allocation> allocations_;
};

}  // namespace memloom::wholememory
