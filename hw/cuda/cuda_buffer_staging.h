// Device memory staged through page-locked host buffers, on a stream of its own, for the host
// collectives (groups NCCL refuses or that need no communicator) and the UCX transport where its
// UCX has no CUDA support.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>

#include "hw/host/buffer_staging.h"
#include "src/base/range_map.h"

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
  // Page-locked; free_host keeps the buffer for the process's next allocate_host of that size
  // (freeing waits for the device: cuda_buffer_staging.cpp says why that must not happen).
  void* allocate_host(size_t bytes) override;
  void free_host(void* buffer) noexcept override;
  bool allocation_waits_for_device() const override { return true; }

 private:
  // Queues `count` copies that depend on none of each other: many small ones between this
  // device's memory and buffers of allocate_host by kernel (cuda_staging_copies.h), else in one
  // cudaMemcpyBatchAsync where CUDA has it (13.0 on), else one cudaMemcpyAsync each.
  void enqueue(const host::StagingCopy* copies, size_t count);
  // Whether one side of `copy` is inside a buffer of allocate_host, the other this device's memory.
  bool kernel_reaches(const host::StagingCopy& copy);

  const int device_;
  cudaStream_t stream_ = nullptr;
  std::mutex buffers_mutex_;
  // Every buffer of allocate_host not yet freed; payload: this device's kernels can address it.
  base::RangeMap<bool> buffers_;
};

}  // namespace memloom::cuda
