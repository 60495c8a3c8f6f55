#include "hw/cuda/socket_stager.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/tcp_socket.h"
#include "memloom/error.h"

namespace memloom::cuda {

SocketStager::~SocketStager() {
  if (stream_ != nullptr) {
    // Bounded: a copy of at most two chunks is all that can be pending.
    (void)poll_until([this] { return cudaStreamQuery(stream_) != cudaErrorNotReady; },
                     Deadline::after(std::chrono::seconds(10)));
    (void)cudaStreamDestroy(stream_);
  }
  for (int i = 0; i < 2; ++i) {
    if (copied_[i] != nullptr) (void)cudaEventDestroy(copied_[i]);
    if (buffers_[i] != nullptr) (void)cudaFreeHost(buffers_[i]);
  }
}

void SocketStager::ensure_buffers() {
  if (stream_ != nullptr) return;
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < 2; ++i) {
    check_cuda(cudaMallocHost(&buffers_[i], kChunk), "cudaMallocHost (transport staging)");
    check_cuda(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming), "cudaEventCreate");
  }
}

void SocketStager::wait_copied(int buffer, Deadline deadline) {
  cudaError_t state = cudaSuccess;
  bool done = poll_until(
      [&] {
        state = cudaEventQuery(copied_[buffer]);
        return state != cudaErrorNotReady;
      },
      deadline);
  if (!done) raise(Status::kTimeout, "transport staging copy: deadline passed");
  check_cuda(state, "transport staging copy");
}

void SocketStager::receive_into(int fd, void* destination, size_t bytes, Deadline deadline) {
  if (bytes == 0) return;
  if (!is_device_pointer(destination)) {
    recv_all(fd, destination, bytes, deadline);
    return;
  }
  DeviceGuard guard(device_);
  ensure_buffers();
  auto* out = static_cast<char*>(destination);
  for (size_t offset = 0, chunk = 0; offset < bytes; offset += kChunk, ++chunk) {
    const int buffer = static_cast<int>(chunk % 2);
    const size_t length = std::min(kChunk, bytes - offset);
    if (chunk >= 2) wait_copied(buffer, deadline);  // the buffer's previous chunk is on the GPU
    recv_all(fd, buffers_[buffer], length, deadline);
    check_cuda(cudaMemcpyAsync(out + offset, buffers_[buffer], length, cudaMemcpyDefault, stream_),
               "cudaMemcpyAsync (transport staging)");
    check_cuda(cudaEventRecord(copied_[buffer], stream_), "cudaEventRecord");
  }
  for (int buffer = 0; buffer < 2; ++buffer) wait_copied(buffer, deadline);
}

void SocketStager::send_from(int fd, const void* source, size_t bytes, Deadline deadline) {
  if (bytes == 0) return;
  if (!is_device_pointer(source)) {
    send_all(fd, source, bytes, deadline);
    return;
  }
  DeviceGuard guard(device_);
  ensure_buffers();
  const auto* in = static_cast<const char*>(source);
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto enqueue = [&](size_t chunk) {
    const int buffer = static_cast<int>(chunk % 2);
    const size_t offset = chunk * kChunk;
    check_cuda(cudaMemcpyAsync(buffers_[buffer], in + offset, std::min(kChunk, bytes - offset),
                               cudaMemcpyDefault, stream_),
               "cudaMemcpyAsync (transport staging)");
    check_cuda(cudaEventRecord(copied_[buffer], stream_), "cudaEventRecord");
  };
  enqueue(0);
  if (chunks > 1) enqueue(1);
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const int buffer = static_cast<int>(chunk % 2);
    wait_copied(buffer, deadline);
    const size_t offset = chunk * kChunk;
    send_all(fd, buffers_[buffer], std::min(kChunk, bytes - offset), deadline);
    if (chunk + 2 < chunks) enqueue(chunk + 2);
  }
}

void SocketStager::discard(int fd, size_t bytes, Deadline deadline) {
  std::vector<char> sink(std::min(bytes, kChunk));
  for (size_t offset = 0; offset < bytes; offset += sink.size()) {
    recv_all(fd, sink.data(), std::min(sink.size(), bytes - offset), deadline);
  }
}

}  // namespace memloom::cuda
