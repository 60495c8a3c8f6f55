// Large host-visible copies on two threads: one thread does not saturate DRAM bandwidth on the
// development machines. Used by BM's copy engine and by the emulated backend's stream copies.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <mutex>

#include "src/base/thread_pool.h"

namespace memloom::base {

// Copies large host-visible ranges on two threads: the calling thread and the one worker of a
// ThreadPool of its own (made at the first large copy) claim pieces of at least 1 MiB in turn.
// One thread does not saturate DRAM: a 64 MiB memcpy on the 2-core development VM runs at
// 8-9 GB/s on one thread and 13-14 GB/s on two with cached stores; each piece is written with
// non-temporal stores (streaming_copy.h), which took 64 MiB SHM puts by the copy engine to
// 25-29 GB/s and gets to 21-23 GB/s in three runs at load ~1.3 (memloom-bench shm). Claiming pieces
// (rather than halving) keeps a copy as fast as one thread when the worker gets no core: the caller
// then takes every piece. (A worker preempted in the middle of a piece still delays the copy until
// it runs again: the caller must not return while the worker writes.)
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
  ThreadPool* pool();

  const size_t threshold_;
  const size_t chunk_;
  const pid_t owner_pid_;
  std::mutex pool_mutex_;
  bool pool_tried_ = false;
  std::unique_ptr<ThreadPool> pool_;  // its destructor abandons the thread in a forked child
};

}  // namespace memloom::base
