// Turns CUDA driver, runtime and NCCL failures into memloom::Error, so every call site reads as
// one line and every message names the call that failed. Out-of-memory results map to
// kOutOfMemory (the HAL's contract for exhausted capacity); everything else to kDevice.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>

#include "memloom/deadline.h"
#include "memloom/error.h"

namespace memloom::cuda {

[[noreturn]] void raise_cu(CUresult result, const char* call);
[[noreturn]] void raise_cuda(cudaError_t result, const char* call);
[[noreturn]] void raise_nccl(ncclResult_t result, const char* call, Status status);

inline void check_cu(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) raise_cu(result, call);
}
inline void check_cuda(cudaError_t result, const char* call) {
  if (result != cudaSuccess) raise_cuda(result, call);
}
// ncclInProgress is a success for non-blocking communicators: the caller polls for completion.
inline void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess && result != ncclInProgress) {
    raise_nccl(result, call, Status::kCommunication);
  }
}

// The text of a driver result ("CUDA_ERROR_OUT_OF_MEMORY: out of memory").
std::string describe_cu(CUresult result);

// Makes `device` current on this thread for the guard's lifetime (CUDA's current device is
// per thread, and the HAL's objects are used from any thread). Restores the thread's own driver
// context afterwards, none included: a thread that had chosen no device has chosen none after
// memloom worked on it (the CUDA platform follows a device the thread chose itself).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  CUcontext previous_ = nullptr;
};

// True when `pointer` is memory only a GPU can touch (a device allocation or a VMM mapping of
// one); false for host memory, registered or not.
bool is_device_pointer(const void* pointer);

// Polls `ready` (true when done) with a short spin then growing sleeps; false if the deadline
// passed first.
bool poll_until(const std::function<bool()>& ready, Deadline deadline);

}  // namespace memloom::cuda
