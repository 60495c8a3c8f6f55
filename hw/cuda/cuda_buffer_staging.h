// Device memory staged through host memory for the host collectives (groups NCCL refuses or that
// need no communicator) and the UCX transport where its UCX has no CUDA support: copies on a stream
// of its own, bounded by the deadline, into page-locked host buffers.
#pragma once

#include <cuda_runtime_api.h>

#include "hw/host/buffer_staging.h"

namespace memloom::cuda {

class CudaBufferStaging : public host::BufferStaging {
 public:
  explicit CudaBufferStaging(int device);
  ~CudaBufferStaging() override;
  CudaBufferStaging(const CudaBufferStaging&) = delete;
  CudaBufferStaging& operator=(const CudaBufferStaging&) = delete;

  bool needs_staging(const void* pointer) const override;
  // Thread-safe: the transport's serving thread and its requesting threads share one staging.
  void copy_all(const std::vector<host::StagingCopy>& copies, Deadline deadline) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* buffer) noexcept override;
  bool allocation_waits_for_device() const override { return true; }

 private:
  // Queues `count` copies that depend on none of each other: in one cudaMemcpyBatchAsync where
  // CUDA has it (13.0 on), else one cudaMemcpyAsync each, which for 1024 staged 4 KiB pieces of a
  // scattered batch cost about 2.4 us apiece (H100, memloom-bench bm).
  void enqueue(const host::StagingCopy* copies, size_t count);

  const int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace memloom::cuda
