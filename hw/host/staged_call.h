// The host collectives' staging: a collective call on device buffers run on host copies of them
// (buffer_staging.h says when the host collectives get device buffers).
#pragma once

#include <cstddef>
#include <vector>

#include "hw/hal/collectives.h"
#include "hw/host/buffer_staging.h"
#include "memloom/deadline.h"

namespace memloom::host {

// One call with its device buffers replaced by host copies: the send buffer is copied in at
// construction, the receive buffer back by finish(). Host buffers go through as they are.
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
