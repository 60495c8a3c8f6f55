// Moves the bytes of BM copies once they are validated: merges entries contiguous on both sides,
// then picks a path per entry — a stream copy when both sides are mapped in this process (user
// memory or a same-node slot), the transport when one side is a slot on another node (one request
// per peer for a whole batch), or a read then a write through a host buffer when both are.
// Synchronous copies use their own stream, so a failed asynchronous copy is reported by
// smem_bm_wait and never by a later synchronous copy; where the backend's memory is host-visible
// (the emulated backend), synchronous copies within this process's mappings are a memmove on the
// calling thread instead. On such memory, copies of base::TwoThreadCopier's threshold and more
// run on two threads: synchronous ones on the calling thread and this engine's helper, asynchronous
// ones through the stream's copy, which splits them the same way.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/hal/platform.h"
#include "src/base/two_thread_copier.h"

namespace memloom::smem {

// One side of a copy.
struct CopySide {
  enum class Space : uint8_t { kUser, kDevice, kHost };  // user memory or a GVA range
  uintptr_t address = 0;
  Space space = Space::kUser;
  int rank = -1;        // the slot's owner (-1 for user memory)
  bool remote = false;  // a slot of a rank on another node: only the transport reaches it
};

struct ResolvedCopy {
  CopySide src;
  CopySide dst;
  size_t bytes = 0;
};

// Entries i and i+1 become one when both sides continue each other inside the same space and slot.
std::vector<ResolvedCopy> merge_contiguous(const std::vector<ResolvedCopy>& copies);

class BmCopyEngine {
 public:
  // `transport` may be null when no rank is on another node; peer_addresses[r] is rank r's
  // transport endpoint ("" for same-node ranks).
  BmCopyEngine(hal::Platform& platform, int device, hal::Transport* transport,
               std::vector<std::string> peer_addresses, std::chrono::milliseconds timeout);
  ~BmCopyEngine();

  // Runs the copies (merged first); with async, enqueues them and returns.
  void run(const std::vector<ResolvedCopy>& copies, bool async);
  // Completes every asynchronous copy; throws the first failure among them.
  void wait();

 private:
  struct PeerBatch {
    int rank;
    std::vector<hal::TransferOp> ops;
  };
  struct Plan {
    std::vector<ResolvedCopy> local;
    std::vector<PeerBatch> peers;
    std::vector<ResolvedCopy> staged;  // both sides remote
  };

  Plan plan(const std::vector<ResolvedCopy>& copies) const;
  void transfer(int rank, const std::vector<hal::TransferOp>& ops) const;
  void staged_copy(const ResolvedCopy& copy) const;
  void enqueue_local(hal::Stream& stream, const ResolvedCopy& copy);
  Deadline deadline() const { return Deadline::after(timeout_); }

  hal::Transport* transport_;
  std::vector<std::string> peer_addresses_;
  std::chrono::milliseconds timeout_;
  bool host_copies_;  // the backend's memory is host-visible: synchronous copies need no stream
  // Declared before the streams: destroyed after them, as their queued copies may use it.
  base::TwoThreadCopier copier_;
  std::timed_mutex sync_mutex_;  // interruptible: see run()
  std::unique_ptr<hal::Stream> sync_stream_;
  std::mutex async_mutex_;
  std::unique_ptr<hal::Stream> async_stream_;
};

}  // namespace memloom::smem
