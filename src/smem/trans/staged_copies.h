// Stream copies between host buffers and memory the CPU may not address (CUDA device memory), for
// the data paths of backends where sockets and memcpy cannot touch registered memory directly.
// The TCP path then moves every byte through a host buffer: sender side gather, socket, receiver
// side scatter. MEMLOOM_TRANS_STAGING=1 forces this mode on the emulated backend too, so that it
// is tested without a GPU.
#pragma once

#include <cstddef>
#include <memory>

#include "hw/hal/stream.h"
#include "memloom/deadline.h"

namespace memloom::smem::trans {

// True when the process's backend needs staging (or MEMLOOM_TRANS_STAGING=1 asks for it).
bool staging_required();

class StagedCopies {
 public:
  // A stream of the process's platform on `device`.
  explicit StagedCopies(int device);
  // Enqueues a copy between any two addresses the backend reaches.
  void copy(void* dst, const void* src, size_t bytes) { stream_->copy(dst, src, bytes); }
  // Waits for every enqueued copy (kTimeout at the deadline, or the copy's own failure).
  void finish(Deadline deadline) { stream_->synchronize(deadline); }

 private:
  std::unique_ptr<hal::Stream> stream_;
};

}  // namespace memloom::smem::trans
