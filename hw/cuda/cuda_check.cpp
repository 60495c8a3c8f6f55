#include "hw/cuda/cuda_check.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace memloom::cuda {

std::string describe_cu(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(name != nullptr ? name : "CUDA_ERROR_?") + ": " +
         (text != nullptr ? text : "unknown error " + std::to_string(static_cast<int>(result)));
}

void raise_cu(CUresult result, const char* call) {
  raise(result == CUDA_ERROR_OUT_OF_MEMORY ? Status::kOutOfMemory : Status::kDevice,
        std::string(call) + " failed: " + describe_cu(result));
}

void raise_cuda(cudaError_t result, const char* call) {
  // Clear a non-sticky error so it does not resurface on an unrelated later call.
  (void)cudaGetLastError();
  raise(result == cudaErrorMemoryAllocation ? Status::kOutOfMemory : Status::kDevice,
        std::string(call) + " failed: " + cudaGetErrorName(result) + ": " +
            cudaGetErrorString(result));
}

void raise_nccl(ncclResult_t result, const char* call, Status status) {
  raise(status, std::string(call) + " failed: " + ncclGetErrorString(result) + " (" +
                    std::to_string(static_cast<int>(result)) + ")");
}

DeviceGuard::DeviceGuard(int device) {
  check_cu(cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  // Always set: besides choosing the device, cudaSetDevice makes its primary context current on
  // this thread, which the driver API calls (cuMem*) need.
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  CUcontext now = nullptr;
  if (cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != previous_) (void)cuCtxSetCurrent(previous_);
}

bool is_device_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
}

bool poll_until(const std::function<bool()>& ready, Deadline deadline) {
  // GPU work usually completes within a few milliseconds, and a late look adds its delay to every
  // synchronous call (a 64 MiB NVLink copy takes ~170 us): poll with yields for the first 2 ms,
  // as CUDA's own spin-wait does, then sleep a tenth of the time waited so far (at most 1 ms), so
  // that a long wait costs little CPU and is overshot by at most ~10%.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  constexpr auto kYieldFor = std::chrono::milliseconds(2);
  for (;;) {
    if (ready()) return true;
    if (deadline.expired()) return false;
    const auto waited = Clock::now() - start;
    if (waited < kYieldFor) {
      std::this_thread::yield();
      continue;
    }
    const auto sleep = std::min<Clock::duration>(std::chrono::milliseconds(1), waited / 10);
    std::this_thread::sleep_for(std::min<Clock::duration>(sleep, deadline.remaining()));
  }
}

}  // namespace memloom::cuda
