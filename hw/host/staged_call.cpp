#include "hw/host/staged_call.h"

#include "hw/host/collective_header.h"

namespace memloom::host {

StagedCall::StagedCall(BufferStaging& staging, const hal::CollectiveCall& call, int rank, int size,
                       Deadline deadline)
    : staging_(staging), user_call_(call), host_call_(call) {
  const size_t send_bytes = send_extent(call, rank, size);
  if (send_bytes > 0 && call.send != nullptr && staging.needs_staging(call.send)) {
    send_host_.resize(send_bytes);
    staging.copy(send_host_.data(), call.send, send_bytes, deadline);
    host_call_.send = send_host_.data();
  }
  recv_bytes_ = recv_extent(call, rank, size);
  if (recv_bytes_ > 0 && call.recv != nullptr && staging.needs_staging(call.recv)) {
    recv_host_.resize(recv_bytes_);
    host_call_.recv = recv_host_.data();
  }
}

void StagedCall::finish(Deadline deadline) {
  if (!recv_host_.empty()) staging_.copy(user_call_.recv, recv_host_.data(), recv_bytes_, deadline);
}

}  // namespace memloom::host
