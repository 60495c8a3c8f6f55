// The streams WholeMemory operations run on. A user names a stream by its native handle (what
// memloom_stream_create returned, a cudaStream_t on the CUDA backend, or NULL for the default
// stream); the registry turns that into a hal::Stream, and keeps, per stream, the small buffers
// through which a kernel reports a bad index back to the host in stream order.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>

#include "hw/hal/memory_domain.h"
#include "hw/hal/stream.h"

namespace memloom::wholememory {

// A device word kernels record a bad index in, and a registered host page it is read back into
// (word 0) next to a zero (word 1) that resets the device word; both reached by stream copies.
class BadIndexSlot {
 public:
  explicit BadIndexSlot(int device);
  ~BadIndexSlot();
  BadIndexSlot(const BadIndexSlot&) = delete;
  BadIndexSlot& operator=(const BadIndexSlot&) = delete;

  unsigned long long* device_word() const { return device_word_; }
  unsigned long long* host_result() const { return host_page_; }
  const unsigned long long* host_zero() const { return host_page_ + 1; }

 private:
  std::unique_ptr<hal::Segment> segment_;
  unsigned long long* device_word_ = nullptr;
  unsigned long long* host_page_ = nullptr;
  size_t host_bytes_ = 0;
};

class OpStream {
 public:
  explicit OpStream(std::unique_ptr<hal::Stream> stream);
  // Drains the stream before the slot it may still write goes.
  ~OpStream();

  hal::Stream& stream() { return *stream_; }
  // Held while one operation enqueues its sequence, so two threads sharing a stream do not
  // interleave their uses of the slot.
  std::mutex& enqueue_mutex() { return enqueue_mutex_; }
  // Created on first use (a device allocation), on the stream's device.
  BadIndexSlot& bad_index_slot(int device);

 private:
  std::mutex enqueue_mutex_;
  std::unique_ptr<BadIndexSlot> slot_;
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
