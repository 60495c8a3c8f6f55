// How host collectives reach buffers the CPU cannot load and store. The CUDA backend serves groups
// that NCCL cannot (several ranks on one GPU, control-only groups) with the host collectives, and
// its callers pass device buffers; a BufferStaging moves such buffers through host memory around
// the call. The emulated backend passes none: its buffers are all host memory.
#pragma once

#include <cstddef>
#include <vector>

#include "hw/hal/collectives.h"
#include "memloom/deadline.h"

namespace memloom::host {

class BufferStaging {
 public:
  virtual ~BufferStaging() = default;
  // True when the CPU cannot touch `pointer` directly (device memory).
  virtual bool needs_staging(const void* pointer) const = 0;
  // Copies between host and device memory; throws kTimeout at the deadline.
  virtual void copy(void* to, const void* from, size_t bytes, Deadline deadline) = 0;
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
