// Device buffers of host collectives, staged through host memory. Groups with several ranks on
// one GPU cannot use NCCL (it refuses two ranks on one device), and control-only groups need no
// communicator of their own: both use the host collectives, which read and write their buffers
// with the CPU, while callers such as the WholeMemory exchange pass device buffers. This staging
// tells device pointers apart and copies them on a stream of its own, bounded by the deadline.
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
  void copy(void* to, const void* from, size_t bytes, Deadline deadline) override;

 private:
  const int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace memloom::cuda
