// Moves the bytes of BM copies once they are validated: merges entries contiguous on both sides,
// then picks a path per entry — a stream copy when both sides are mapped in this process (user
// memory or a same-node slot), the transport when one side is a slot on another node (one request
// per peer for a whole batch), or a read then a write through a host buffer when both are.
// Synchronous copies use their own stream, so a failed asynchronous copy is reported by
// smem_bm_wait and never by a later synchronous copy; where the backend's memory is host-visible
// (the emulated backend), synchronous copies within this process's mappings are a memmove on the
// calling thread instead. On such memory, copies of TwoThreadCopier's threshold and more run on
// two threads (the thread that copies and a helper), in the synchronous and asynchronous paths.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/hal/platform.h"
#include "src/core/thread_pool.h"

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

// Copies large host-visible ranges on two threads: the calling thread and the one worker of a
// core::ThreadPool of its own (made at the first large copy) claim pieces of at least 1 MiB in
// turn. One thread does not saturate DRAM: a 64 MiB memcpy on the 2-core development VM runs at
// 8-9 GB/s on one thread and 13-14 GB/s on two. Claiming pieces (rather than halving) keeps a copy
// as fast as one thread when the worker gets no core: the caller then takes every piece. (A worker
// preempted in the middle of a piece still delays the copy until it runs again: the caller must
// not return while the worker writes.)
class TwoThreadCopier {
 public:
  static constexpr size_t kDefaultThreshold = 4u << 20;  // below it a hand-off costs too much
  static constexpr size_t kDefaultChunk = 1u << 20;

  explicit TwoThreadCopier(size_t threshold = kDefaultThreshold, size_t chunk = kDefaultChunk);
  ~TwoThreadCopier();
  TwoThreadCopier(const TwoThreadCopier&) = delete;
  TwoThreadCopier& operator=(const TwoThreadCopier&) = delete;

  // Whether copy() may split this copy: at least the threshold, and the ranges do not overlap
  // (pieces copied out of order would break memmove's semantics).
  bool splits(const void* dst, const void* src, size_t bytes) const;
  // memmove(dst, src, bytes). On one thread when the copy does not split, when no worker thread
  // can be started, or in a child forked after the worker started. Several threads may copy at
  // once; they share the worker.
  void copy(void* dst, const void* src, size_t bytes);

 private:
  // The pool, made on first use; null when its thread could not be started.
  core::ThreadPool* pool();

  const size_t threshold_;
  const size_t chunk_;
  const pid_t owner_pid_;
  std::mutex pool_mutex_;
  bool pool_tried_ = false;
  std::unique_ptr<core::ThreadPool> pool_;  // its destructor abandons the thread in a forked child
};

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
  TwoThreadCopier copier_;
  std::mutex sync_mutex_;
  std::unique_ptr<hal::Stream> sync_stream_;
  std::mutex async_mutex_;
  std::unique_ptr<hal::Stream> async_stream_;
};

}  // namespace memloom::smem
