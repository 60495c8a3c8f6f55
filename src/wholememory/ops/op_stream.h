// The streams WholeMemory operations run on. A user names a stream by its native handle (what
// memloom_stream_create returned, a cudaStream_t on the CUDA backend, or NULL for the default
// stream); the registry turns that into a hal::Stream, and keeps, per stream, the ring through
// which kernels report bad indices back to the host in stream order (bad_index_ring.h).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>

#include "hw/hal/stream.h"
#include "memloom/deadline.h"
#include "src/wholememory/ops/bad_index_ring.h"

namespace memloom::wholememory {

class OpStream {
 public:
  explicit OpStream(std::unique_ptr<hal::Stream> stream);
  // Drains the stream before the slot it may still write goes.
  ~OpStream();

  hal::Stream& stream() { return *stream_; }
  // Held while one operation enqueues its sequence, so two threads sharing a stream do not
  // interleave their uses of the ring.
  std::mutex& enqueue_mutex() { return enqueue_mutex_; }
  // Created on first use (a device allocation), on the stream's device. Callers hold
  // enqueue_mutex().
  BadIndexRing& bad_index_ring(int device);

  // Waits for the stream, then raises (kInvalidInput) the first bad index an operation on it
  // found since the last synchronize, once; the stream's own failures are raised as they come.
  void synchronize(Deadline deadline);

 private:
  std::mutex enqueue_mutex_;
  std::unique_ptr<BadIndexRing> ring_;
  std::unique_ptr<hal::Stream> stream_;  // declared last: destroyed (drained) first
};

class StreamRegistry {
 public:
  static StreamRegistry& instance();

  // A new stream on the current device; returns its native handle.
  void* create();
  // Destroys a stream made by create(); kInvalidInput for any other handle.
  void destroy(void* handle);
  // The stream behind a handle: one made by create(), NULL (the default stream), or on a backend
  // that adopts native streams (CUDA) any native stream, wrapped on first use and kept.
  std::shared_ptr<OpStream> resolve(void* handle);

 private:
  StreamRegistry() = default;
  // A child forked from a process that used streams inherits entries whose worker threads stayed
  // in the parent; it drops (leaks) them and starts afresh.
  void forget_if_forked();

  std::mutex mutex_;
  pid_t owner_pid_ = 0;
  std::map<void*, std::shared_ptr<OpStream>>* streams_ = nullptr;
};

}  // namespace memloom::wholememory
