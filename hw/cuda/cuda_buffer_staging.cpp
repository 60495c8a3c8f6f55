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

void CudaBufferStaging::copy_all(const std::vector<host::StagingCopy>& copies, Deadline deadline) {
  if (copies.empty()) return;
  DeviceGuard guard(device_);
  for (const host::StagingCopy& c : copies) {
    check_cuda(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDefault, stream_),
               "cudaMemcpyAsync (staging device memory)");
  }
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
  if (!done) raise(Status::kTimeout, "staging device memory through host memory: deadline passed");
  if (failed) raise_cuda(cudaGetLastError(), "staging device memory through host memory");
}

void* CudaBufferStaging::allocate_host(size_t bytes) {
  DeviceGuard guard(device_);
  void* buffer = nullptr;
  // Portable: the copies may reach any device of the process by unified addressing.
  check_cuda(cudaHostAlloc(&buffer, bytes, cudaHostAllocPortable), "cudaHostAlloc (staging)");
  return buffer;
}

void CudaBufferStaging::free_host(void* buffer) noexcept {
  (void)cudaFreeHost(buffer);
}

}  // namespace memloom::cuda
