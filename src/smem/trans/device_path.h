// The same-node data path for memory only the backend's streams reach (CUDA device memory):
// device memory a peer registered is exported by it (hal::MemoryDomain::export_device_range, the
// descriptor in its RegionTable slot, the fd through the FdBroker); this process imports each
// region once, caches the import per slot and generation, and copies between its own memory and
// the peer's with one stream, while holding the regions (RegionHolds). On GPUs that is a
// device-to-device copy over NVLink or PCIe instead of two staging copies and a socket.
//
// A peer in this very process needs no import: its addresses are ours.
//
// Whatever this path cannot do (a region without an export: host memory, a range over several
// allocations, a backend without the feature; an import the driver refuses) it reports as
// kUnavailable before copying anything, and the caller uses the TCP path, which worked before.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "memloom/deadline.h"
#include "src/smem/trans/peer_process.h"
#include "src/smem/trans/region_table.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/transfer_piece.h"

namespace memloom::smem::trans {

class DevicePath {
 public:
  // `table_fd`: the peer's RegionTable (ownership taken). `domain` imports the peer's exports;
  // `streams` copy. Throws kCommunication if pid is gone.
  DevicePath(std::string peer_name, pid_t pid, int table_fd, hal::MemoryDomain& domain,
             std::shared_ptr<StreamPool> streams);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  // False once the peer process exited or destroyed its instance.
  bool alive() const;

  enum class Outcome { kDone, kUnavailable };
  // Copies every piece, or (kUnavailable) nothing when some piece's region cannot be reached
  // this way. Throws kInvalidInput for a range the peer has not registered or deregistered during
  // the transfer, kCommunication if the peer exits, kTimeout at the deadline.
  Outcome run(Direction direction, const std::vector<Piece>& pieces, Deadline deadline);

 private:
  struct Import;
  // The import of `region`, or null when it cannot be imported (logged once).
  std::shared_ptr<Import> import_for(const RegionRef& region, Deadline deadline);
  void forget_stale_imports(const RegionSnapshot& snapshot);
  void copy_window(Direction direction, const std::vector<Piece>& pieces, size_t begin, size_t end,
                   const std::vector<const RegionRef*>& region_of,
                   const std::vector<std::shared_ptr<Import>>& imports, Deadline deadline);

  std::string peer_name_;
  const bool same_process_;
  RegionView view_;
  PeerProcess process_;
  hal::MemoryDomain& domain_;
  std::shared_ptr<StreamPool> streams_;
  std::mutex mutex_;
  std::map<uint32_t, std::shared_ptr<Import>> imports_;  // by table slot
  std::set<std::pair<uint32_t, uint64_t>> refused_;      // slot and generation
  uint64_t imports_version_ = 0;
  bool refusal_logged_ = false;
  // Imports a timed-out copy may still use: kept until this path goes.
  std::vector<std::shared_ptr<Import>> abandoned_;
};

}  // namespace memloom::smem::trans
