#include "hw/cuda/cuda_buffer_staging.h"

#include "hw/cuda/cuda_check.h"
#include "memloom/error.h"

namespace memloom::cuda {

CudaBufferStaging::CudaBufferStaging(int device) : device_(device) {
  DeviceGuard guard(device_);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaBufferStaging::~CudaBufferStaging() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

bool CudaBufferStaging::needs_staging(const void* pointer) const {
  return is_device_pointer(pointer);
}

void CudaBufferStaging::copy(void* to, const void* from, size_t bytes, Deadline deadline) {
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

}  // namespace memloom::cuda
