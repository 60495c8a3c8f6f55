// One TRANS instance: its identity in the config store, the registry of memory it serves, its HAL
// transport (the network path, both ways: it serves registered memory to the job's ranks and
// moves this instance's transfers to peers that same-node paths do not reach), and the peers it
// transfers with. The C facade (smem_trans_api.cpp) checks arguments and
// calls this; everything here throws memloom::Error.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "hw/hal/transport.h"
#include "memloom/deadline.h"
#include "src/base/unique_fd.h"
#include "src/smem/trans/peer_directory.h"
#include "src/smem/trans/region_table.h"
#include "src/smem/trans/shareable_host_memory.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/transfer_piece.h"
#include "src/store/client.h"
#include "src/store/server.h"

namespace memloom::smem::trans {

// Data paths an instance may use (from smem_trans_config_t::dataOpType).
struct DataPaths {
  bool direct = true;   // SMEMB_DATA_OP_SDMA: same-node copies
  bool network = true;  // HOST_TCP, HOST_RDMA, HOST_URMA or DEVICE_RDMA: the HAL transport
};

struct EngineOptions {
  bool initiates = true;  // SENDER or BOTH
  bool serves = false;    // RECEIVER or BOTH
  std::chrono::milliseconds timeout{120000};
  DataPaths paths;
  bool start_store = false;
  int device = -1;  // the device of stream copies when staging (-1: the platform's current one)
  // When staging: exports registered device memory to same-node peers and imports theirs
  // (null: the platform's memory domain).
  hal::MemoryDomain* device_domain = nullptr;
};

// One entry of a read or write: `bytes` between local and the peer's address `remote`.
struct TransferEntry {
  char* local;
  uint64_t remote;
  uint64_t bytes;
};

class Engine {
 public:
  static std::shared_ptr<Engine> create(const std::string& store_url, const std::string& unique_id,
                                        const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Unpublishes the instance and stops serving; later calls fail. Idempotent.
  void shutdown();
  const std::string& unique_id() const { return unique_id_; }

  // All ranges or none.
  void register_memory(const std::vector<std::pair<void*, size_t>>& ranges);
  void deregister_memory(void* address);
  void* allocate(size_t bytes);
  void release(void* address);

  // Now plus the instance's timeout (config.initTimeout): the bound of every wait of a call.
  Deadline deadline() const { return Deadline::after(options_.timeout); }
  // Throws kNotSupported if this instance's role does not initiate transfers.
  void check_initiator() const;
  // Resolves the peer now (kNotFound, kCommunication), for errors at submission time.
  void check_peer(const std::string& peer_id);
  // Runs every entry with `peer_id`, in order, before returning.
  void transfer(Direction direction, const std::string& peer_id,
                const std::vector<TransferEntry>& entries);

 private:
  Engine(std::string unique_id, EngineOptions options);
  std::chrono::milliseconds hold_wait() const;
  // How same-node peers reach [address, address+size): the device export when there is one.
  RegionShare share_device_range(void* address, size_t size);
  void withdraw_export(void* address);
  void check_open() const;
  // The transport to other nodes; null where none could be opened (no_transport_why_ says why).
  // Raises kInvalidInput once the instance was destroyed.
  std::shared_ptr<hal::Transport> transport_unless_destroyed() const;
  // True when the CPU can address every entry's local memory (cross-memory attach needs it).
  bool local_side_is_host(const std::vector<TransferEntry>& entries) const;
  // With staging: memory only streams reach (all memory when MEMLOOM_TRANS_STAGING forces it).
  bool is_device_memory(const void* address) const;
  // The network path: every entry through the transport to the address `peer` published.
  void transfer_by_transport(Direction direction, const std::string& peer_id,
                             const PeerRecord& peer, const std::vector<TransferEntry>& entries,
                             Deadline deadline);
  // Lets peers reach a registered range through the transport (serving instances only).
  void expose(void* address, size_t bytes);
  void withdraw(void* address);

  const std::string unique_id_;
  const EngineOptions options_;
  std::string node_;
  // Set when registered memory is reached through stream copies (created with the instance).
  std::shared_ptr<StreamPool> staging_;
  hal::MemoryDomain* device_domain_ = nullptr;  // set with staging_
  bool staging_forced_ = false;
  std::unique_ptr<store::Server> store_server_;
  std::shared_ptr<store::Client> store_;
  std::unique_ptr<RegionTable> regions_;
  std::string table_token_;
  base::UniqueFd name_;  // holds the uniqueId's address: one live instance per name
  // Shared with the transfers in flight, so shutdown() need not wait for them.
  std::shared_ptr<hal::Transport> transport_;
  // Why this instance has no transport (it refused the uniqueId's address), "" when it has one.
  std::string no_transport_why_;
  std::map<void*, size_t> exposed_;  // ranges the transport serves
  std::unique_ptr<PeerDirectory> peers_;
  mutable std::mutex mutex_;
  bool shut_down_ = false;
  bool published_ =
      false;  // the store holds our record (a failed create must not remove another's)
  struct Allocation {
    std::unique_ptr<ShareableHostMemory> segment;
    std::string token;
    size_t bytes;
  };
  std::map<void*, Allocation> allocations_;
  std::map<void*, std::string> export_tokens_;  // FdBroker tokens of exported device ranges
  bool export_failure_logged_ = false;
};

}  // namespace memloom::smem::trans
