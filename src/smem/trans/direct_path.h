// The same-node data path: copies straight between this process and a peer on the node, checked
// against the peer's RegionTable mapped here. Memory the peer got from smem_trans_malloc is a
// memfd segment mapped into this process and copied with memcpy; other registered memory (user
// buffers, device memory of the emulated backend) is copied with Linux cross-memory attach
// (process_vm_readv/writev), one system call per window of up to 1024 pieces. That needs ptrace
// access to the peer (same user, and Yama ptrace_scope 0); when the kernel refuses it, run()
// reports so and the caller uses the TCP path instead.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "src/base/unique_fd.h"
#include "src/smem/trans/peer_process.h"
#include "src/smem/trans/region_table.h"
#include "src/smem/trans/transfer_piece.h"

namespace memloom::smem::trans {

class DirectPath {
 public:
  // `table_fd`: the peer's RegionTable (ownership taken). Throws kCommunication if pid is gone.
  DirectPath(std::string peer_name, pid_t pid, int table_fd);
  ~DirectPath();

  // False once the peer process exited or destroyed its instance.
  bool alive() const;

  // kUnavailable (nothing copied): a region is device memory, which the CPU cannot address.
  enum class Outcome { kDone, kCrossMemoryDenied, kUnavailable };
  // Copies every piece. Throws kInvalidInput for a range the peer has not registered (nothing is
  // copied then), kCommunication if the peer exits before the copy completed.
  Outcome run(Direction direction, const std::vector<Piece>& pieces, Deadline deadline);

 private:
  struct Mapping;
  std::shared_ptr<Mapping> mapping_for(const RegionRef& region, Deadline deadline);
  void forget_stale_mappings(const RegionSnapshot& snapshot);
  bool cross_memory_copy(Direction direction, std::vector<iovec>& local,
                         std::vector<iovec>& remote);

  std::string peer_name_;
  pid_t pid_;
  RegionView view_;
  PeerProcess process_;
  std::mutex mutex_;
  std::map<uint32_t, std::shared_ptr<Mapping>> mappings_;  // by table slot
  uint64_t mappings_version_ = 0;
};

}  // namespace memloom::smem::trans
