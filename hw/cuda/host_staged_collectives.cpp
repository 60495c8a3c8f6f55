#include "hw/cuda/host_staged_collectives.h"

#include <algorithm>

#include "hw/cuda/cuda_check.h"
#include "memloom/error.h"

namespace memloom::cuda {
namespace {

// The bytes a (counts, displacements) layout spans; 0 when the arrays are null (the inner
// collectives then report the bad call on every rank).
size_t extent_of(const size_t* counts, const size_t* displs, int ranks) {
  if (counts == nullptr || displs == nullptr) return 0;
  size_t extent = 0;
  for (int r = 0; r < ranks; ++r) {
    if (counts[r] > 0) extent = std::max(extent, displs[r] + counts[r]);
  }
  return extent;
}

}  // namespace

HostStagedCollectives::HostStagedCollectives(std::unique_ptr<hal::Collectives> inner, int device)
    : inner_(std::move(inner)), device_(device) {
  DeviceGuard guard(device_);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

HostStagedCollectives::~HostStagedCollectives() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void HostStagedCollectives::copy(void* to, const void* from, size_t bytes, Deadline deadline) {
  DeviceGuard guard(device_);
  check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_),
             "cudaMemcpyAsync (collective staging)");
  bool failed = false;
  const bool done = poll_until(
      [&] {
        cudaError_t state = cudaStreamQuery(stream_);
        if (state == cudaErrorNotReady) {
          (void)cudaGetLastError();
          return false;
        }
        failed = state != cudaSuccess;
        return true;
      },
      deadline);
  if (!done) raise(Status::kTimeout, "staging a collective's device buffer: deadline passed");
  if (failed) raise_cuda(cudaGetLastError(), "staging a collective's device buffer");
}

const void* HostStagedCollectives::host_view(const void* user, size_t bytes,
                                             std::vector<char>& host, bool copy_in,
                                             Deadline deadline) {
  if (bytes == 0 || !is_device_pointer(user)) return user;
  host.resize(bytes);
  if (copy_in) copy(host.data(), user, bytes, deadline);
  return host.data();
}

void HostStagedCollectives::copy_back(void* user, const std::vector<char>& host, size_t bytes,
                                      Deadline deadline) {
  if (bytes == 0 || host.empty()) return;  // not staged: the inner call wrote `user` itself
  copy(user, host.data(), bytes, deadline);
}

void HostStagedCollectives::broadcast(void* buffer, size_t bytes, int root, Deadline deadline) {
  std::vector<char> host;
  auto* view = const_cast<void*>(host_view(buffer, bytes, host, rank() == root, deadline));
  inner_->broadcast(view, bytes, root, deadline);
  if (rank() != root) copy_back(buffer, host, bytes, deadline);
}

void HostStagedCollectives::allgather(const void* send, void* recv, size_t bytes,
                                      Deadline deadline) {
  std::vector<char> send_host, recv_host;
  const size_t total = bytes * static_cast<size_t>(size());
  const void* send_view = host_view(send, bytes, send_host, true, deadline);
  auto* recv_view = const_cast<void*>(host_view(recv, total, recv_host, false, deadline));
  inner_->allgather(send_view, recv_view, bytes, deadline);
  copy_back(recv, recv_host, total, deadline);
}

void HostStagedCollectives::allgatherv(const void* send, void* recv, const size_t* recv_counts,
                                       const size_t* recv_displs, Deadline deadline) {
  std::vector<char> send_host, recv_host;
  const size_t mine = recv_counts != nullptr ? recv_counts[rank()] : 0;
  const size_t extent = extent_of(recv_counts, recv_displs, size());
  const void* send_view = host_view(send, mine, send_host, true, deadline);
  auto* recv_view = const_cast<void*>(host_view(recv, extent, recv_host, false, deadline));
  inner_->allgatherv(send_view, recv_view, recv_counts, recv_displs, deadline);
  copy_back(recv, recv_host, extent, deadline);
}

void HostStagedCollectives::alltoallv(const void* send, const size_t* send_counts,
                                      const size_t* send_displs, void* recv,
                                      const size_t* recv_counts, const size_t* recv_displs,
                                      Deadline deadline) {
  std::vector<char> send_host, recv_host;
  const size_t send_extent = extent_of(send_counts, send_displs, size());
  const size_t recv_extent = extent_of(recv_counts, recv_displs, size());
  const void* send_view = host_view(send, send_extent, send_host, true, deadline);
  auto* recv_view = const_cast<void*>(host_view(recv, recv_extent, recv_host, false, deadline));
  inner_->alltoallv(send_view, send_counts, send_displs, recv_view, recv_counts, recv_displs,
                    deadline);
  copy_back(recv, recv_host, recv_extent, deadline);
}

}  // namespace memloom::cuda
