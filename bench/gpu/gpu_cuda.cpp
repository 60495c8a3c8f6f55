#include "bench/gpu/gpu_cuda.h"

#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

namespace memloom::bench::gpu {

void check_cuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(what + ": " + cudaGetErrorName(status) + " (" +
                             cudaGetErrorString(status) + ")");
  }
}

void wait_event(cudaEvent_t event, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + kGpuWaitTimeout;
  while (true) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) check_cuda(status, what);
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(what + ": the GPU work did not finish within " +
                               std::to_string(kGpuWaitTimeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void wait_stream(cudaStream_t stream, const std::string& what) {
  cudaEvent_t event = nullptr;
  check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  try {
    check_cuda(cudaEventRecord(event, stream), what + ": cudaEventRecord");
    wait_event(event, what);
  } catch (...) {
    cudaEventDestroy(event);
    throw;
  }
  cudaEventDestroy(event);
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) {
  check_cuda(cudaMalloc(&data_, bytes),
             "cudaMalloc of " + std::to_string(bytes >> 20) + " MiB for " + what);
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

Stream::Stream() {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault), "cudaStreamCreate");
}

Stream::~Stream() {
  cudaStreamDestroy(stream_);
}

EventTimer::EventTimer() {
  check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
  if (cudaEventCreate(&stop_) != cudaSuccess) {
    cudaEventDestroy(start_);
    throw std::runtime_error("cudaEventCreate failed");
  }
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

void EventTimer::start(cudaStream_t stream) {
  check_cuda(cudaEventRecord(start_, stream), "cudaEventRecord");
}

double EventTimer::stop(cudaStream_t stream, const std::string& what) {
  check_cuda(cudaEventRecord(stop_, stream), what + ": cudaEventRecord");
  wait_event(stop_, what);
  float milliseconds = 0;
  check_cuda(cudaEventElapsedTime(&milliseconds, start_, stop_), "cudaEventElapsedTime");
  return milliseconds * 1e-3;
}

double wall_seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void use_device(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

void fill_device(void* data, unsigned char value, size_t bytes) {
  check_cuda(cudaMemsetAsync(data, value, bytes, nullptr), "cudaMemsetAsync");
  settle_default_stream("cudaMemsetAsync");
}

void settle_default_stream(const std::string& what) {
  wait_stream(nullptr, what);
}

void use_device_with_peers(int device) {
  use_device(device);
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  for (int peer = 0; peer < count; ++peer) {
    if (peer == device) continue;
    int possible = 0;
    check_cuda(cudaDeviceCanAccessPeer(&possible, device, peer), "cudaDeviceCanAccessPeer");
    if (!possible) continue;  // cudaMemcpyPeer then stages; the figures will show it
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // clears the sticky-free error the call left behind
      continue;
    }
    check_cuda(status, "cudaDeviceEnablePeerAccess(" + std::to_string(peer) + ")");
  }
}

void expect_device_bytes(const void* data, size_t checked, unsigned char value,
                         const std::string& what) {
  std::vector<unsigned char> seen(checked);
  check_cuda(cudaMemcpy(seen.data(), data, checked, cudaMemcpyDefault),
             what + ": reading the copy back");
  for (size_t i = 0; i < checked; ++i) {
    if (seen[i] != value) {
      throw std::runtime_error(what + ": byte " + std::to_string(i) + " holds " +
                               std::to_string(seen[i]) + " instead of " + std::to_string(value) +
                               " (the copy did not land)");
    }
  }
}

void print_failure(const std::string& figure, const std::string& why) {
  std::fprintf(stderr, "memloom-bench-gpu: %s: FAILED: %s\n", figure.c_str(), why.c_str());
  std::fflush(stderr);
}

}  // namespace memloom::bench::gpu
