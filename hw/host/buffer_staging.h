// How host code reaches buffers the CPU cannot load and store. The CUDA backend serves groups that
// NCCL cannot with the host collectives, and moves data between nodes with the UCX transport where
// UCX cannot register device memory (cuda_buffer_staging.h); callers of both pass device buffers,
// and a BufferStaging moves them through host memory. The emulated backend passes none.
#pragma once

#include <cstddef>
#include <vector>

#include "hw/hal/collectives.h"
#include "memloom/deadline.h"

namespace memloom::host {

struct StagingCopy {
  void* to;
  const void* from;
  size_t bytes;
};

class BufferStaging {
 public:
  virtual ~BufferStaging() = default;
  // True when the CPU cannot touch `pointer` directly (device memory).
  virtual bool needs_staging(const void* pointer) const = 0;
  // Copies between host and device memory; throws kTimeout at the deadline.
  virtual void copy(void* to, const void* from, size_t bytes, Deadline deadline) = 0;
  // Several copies, run in order (a later one sees an earlier one's bytes), all done on return.
  // The CUDA staging queues them all and waits once: a batch of small ops pays one wait.
  virtual void copy_all(const std::vector<StagingCopy>& copies, Deadline deadline) {
    for (const StagingCopy& c : copies) copy(c.to, c.from, c.bytes, deadline);
  }
  // Host memory that copy() moves at full speed (page-locked on CUDA).
  virtual void* allocate_host(size_t bytes) = 0;
  virtual void free_host(void* buffer) noexcept = 0;
};

// One call with its device buffers replaced by host copies: the send buffer is copied in at
// construction, the receive buffer back by finish(). Buffers the CPU can touch go through as
// they are.
class StagedCall {
 public:
  StagedCall(BufferStaging& staging, const hal::CollectiveCall& call, int rank, int size,
             Deadline deadline);
  const hal::CollectiveCall& host_call() const { return host_call_; }
  // After the call succeeded: the received bytes to the caller's device buffer.
  void finish(Deadline deadline);

 private:
  BufferStaging& staging_;
  const hal::CollectiveCall user_call_;
  hal::CollectiveCall host_call_;
  size_t recv_bytes_ = 0;
  std::vector<char> send_host_, recv_host_;
};

}  // namespace memloom::host
