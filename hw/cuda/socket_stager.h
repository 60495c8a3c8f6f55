// Moves bytes between a TCP socket and memory that may live on a GPU. Host memory goes straight
// to or from the socket; device memory is staged through two pinned host buffers, so the GPU copy
// of one chunk overlaps the network transfer of the next.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "memloom/deadline.h"

namespace memloom::cuda {

class SocketStager {
 public:
  // Staging copies run on a stream of `device`; they reach any device by unified addressing.
  explicit SocketStager(int device) : device_(device) {}
  ~SocketStager();
  SocketStager(const SocketStager&) = delete;
  SocketStager& operator=(const SocketStager&) = delete;

  void receive_into(int fd, void* destination, size_t bytes, Deadline deadline);
  void send_from(int fd, const void* source, size_t bytes, Deadline deadline);
  // Receives and drops `bytes` (the payload of a refused write keeps the stream in step).
  void discard(int fd, size_t bytes, Deadline deadline);

  static constexpr size_t kChunk = size_t(4) << 20;

 private:
  void ensure_buffers();
  void wait_copied(int buffer, Deadline deadline);

  const int device_;
  cudaStream_t stream_ = nullptr;
  void* buffers_[2] = {nullptr, nullptr};
  cudaEvent_t copied_[2] = {nullptr, nullptr};
};

}  // namespace memloom::cuda
