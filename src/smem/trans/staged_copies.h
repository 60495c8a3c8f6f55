// Stream copies for the data paths of backends where sockets and memcpy cannot touch registered
// memory (CUDA device memory): the TCP path then moves every byte through a host buffer (sender
// side gather, socket, receiver side scatter), and the same-node device path copies between the
// two processes' memory directly. MEMLOOM_TRANS_STAGING=1 forces staging on the emulated backend
// too, so that it is tested without a GPU.
//
// Creating a stream is not free (on CUDA the process's first one also creates the device's
// context, which takes hundreds of milliseconds), so an instance makes its streams once, at
// creation, and every transfer borrows one from its pool instead of counting that against its
// own deadline.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/hal/stream.h"
#include "memloom/deadline.h"

namespace memloom::smem::trans {

// True when the process's backend needs staging (or MEMLOOM_TRANS_STAGING=1 asks for it).
bool staging_required();
// True when MEMLOOM_TRANS_STAGING=1 asks for staging: then every registered and local address
// counts as device memory, so the emulated backend runs the CUDA backend's device-memory paths.
bool staging_forced();

// Streams of the process's platform on one device, reused by the transfers of one instance.
// Thread-safe: concurrent transfers each borrow their own stream.
class StreamPool {
 public:
  // Creates the first stream now (and with it, on CUDA, the device's context).
  explicit StreamPool(int device);
  int device() const { return device_; }

  // One stream, borrowed for the copies of one transfer step.
  class Lease {
   public:
    explicit Lease(StreamPool& pool);
    ~Lease();  // gives the stream back, unless its copies may still be pending
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Enqueues a copy between any two addresses the backend reaches.
    void copy(void* dst, const void* src, size_t bytes);
    // Waits for every enqueued copy (kTimeout at the deadline, or the copy's own failure). A
    // stream whose wait failed is never reused: later work would queue behind a stuck copy.
    void finish(Deadline deadline);

   private:
    StreamPool& pool_;
    std::unique_ptr<hal::Stream> stream_;
    bool idle_ = true;  // nothing enqueued since the last successful finish()
  };

 private:
  std::unique_ptr<hal::Stream> take();
  void give_back(std::unique_ptr<hal::Stream> stream);

  const int device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<hal::Stream>> idle_;
};

}  // namespace memloom::smem::trans
