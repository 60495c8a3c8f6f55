// CUDA runtime helpers for the ranks of memloom-bench-gpu: errors become exceptions naming the
// call, every wait on the GPU is bounded (a hung copy ends the rank with a message, never a hang),
// and the two timers the figures use.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace memloom::bench::gpu {

// Longest wait for one sample's work on the GPU.
constexpr std::chrono::seconds kGpuWaitTimeout{30};

// Throws std::runtime_error "<what>: <CUDA's message>" unless status is cudaSuccess.
void check_cuda(cudaError_t status, const std::string& what);

// Waits until event has completed, at most kGpuWaitTimeout (then throws).
void wait_event(cudaEvent_t event, const std::string& what);

// Records an event on stream and waits for it (bounded).
void wait_stream(cudaStream_t stream, const std::string& what);

// cudaMalloc'ed memory on the current device, freed when the object goes.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  char* bytes() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
};

// A stream on the current device. Blocking (ordered after the legacy default stream), so the
// set-up copies and memsets issued before the timed work have landed when it starts.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Two events around work on a stream: seconds between them, after a bounded wait.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t stream);
  double stop(cudaStream_t stream, const std::string& what);

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// Best seconds per call of op() (which enqueues work on stream), timed with CUDA events: op()
// runs once untimed (warm-up), then `samples` samples of `reps` back-to-back calls each.
template <typename Op>
double best_event_seconds(cudaStream_t stream, Op&& op, const std::string& what, int samples = 10,
                          int reps = 4) {
  op();
  wait_stream(stream, what + " (warm-up)");
  EventTimer timer;
  double best = 1e30;
  for (int sample = 0; sample < samples; ++sample) {
    timer.start(stream);
    for (int i = 0; i < reps; ++i) op();
    const double seconds = timer.stop(stream, what) / reps;
    if (seconds < best) best = seconds;
  }
  return best;
}

double wall_seconds_now();

// Best seconds per call of op() by the host clock, for calls that complete their work themselves
// (op() includes its own bounded wait). Warm-up call first, then samples of `reps` calls.
template <typename Op>
double best_wall_seconds(Op&& op, int samples = 10, int reps = 4) {
  op();
  double best = 1e30;
  for (int sample = 0; sample < samples; ++sample) {
    const double start = wall_seconds_now();
    for (int i = 0; i < reps; ++i) op();
    const double seconds = (wall_seconds_now() - start) / reps;
    if (seconds < best) best = seconds;
  }
  return best;
}

// Makes `device` current.
void use_device(int device);

// Makes `device` current and lets it read and write every other device's cudaMalloc'ed memory
// directly (cudaMemcpyPeer then goes over NVLink without staging).
void use_device_with_peers(int device);

// Sets bytes at data (device memory) to value and waits (bounded) until it is done, so work on
// any stream, memloom's included, sees it.
void fill_device(void* data, unsigned char value, size_t bytes);

// Waits (bounded) for everything issued so far on the legacy default stream: synchronous-looking
// CUDA calls (cudaMemcpy from pageable memory) may return before their DMA has finished.
void settle_default_stream(const std::string& what);

// Throws unless the first `checked` bytes at `data` (device memory of any GPU) all equal value:
// proves that a timed copy really landed.
void expect_device_bytes(const void* data, size_t checked, unsigned char value,
                         const std::string& what);

// A message on stderr for a figure that could not be measured (the rank goes on with the next).
void print_failure(const std::string& figure, const std::string& why);

}  // namespace memloom::bench::gpu
