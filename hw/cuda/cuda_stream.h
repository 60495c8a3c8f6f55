// Stream and Event of the CUDA backend: a CUDA stream (created here, or a caller's cudaStream_t
// adopted without taking ownership) and CUDA events. Every wait polls against its deadline, since
// cudaStreamSynchronize and cudaEventSynchronize cannot be bounded.
//
// Host functions may call CUDA (the core's do: staging copies, transport transfers), which a
// cudaLaunchHostFunc callback must not. So the callback only hands the function to this stream's
// worker thread and blocks, holding the stream in order, until the worker has run it.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "hw/hal/stream.h"

namespace memloom::cuda {

class CudaEvent : public hal::Event {
 public:
  explicit CudaEvent(int device);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  bool query() override;
  void synchronize(Deadline deadline) override;
  cudaEvent_t native() const { return event_; }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

class CudaStream : public hal::Stream {
 public:
  // A new non-blocking stream on `device`.
  explicit CudaStream(int device);
  // Wraps `adopted` (a stream of `device` the caller keeps owning).
  CudaStream(int device, cudaStream_t adopted);
  // Waits (bounded) for enqueued work, so no host function outlives its stream.
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  void copy(void* dst, const void* src, size_t bytes) override;
  void launch(const hal::KernelLaunch& launch) override;
  void host_function(std::function<void()> fn) override;
  std::unique_ptr<hal::Event> record() override;
  void wait(hal::Event& event) override;
  void synchronize(Deadline deadline) override;
  void* native_handle() override { return stream_; }

 private:
  struct HostCall;
  static void CUDART_CB on_stream_reaches(void* call);
  void run_worker();
  void keep_error(std::exception_ptr error);

  const int device_;
  cudaStream_t stream_ = nullptr;
  const bool owned_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<HostCall*> calls_;  // handed over by CUDA's callback thread, run by worker_
  bool stopping_ = false;
  std::thread worker_;  // started by the first host_function
  std::exception_ptr first_error_;
};

}  // namespace memloom::cuda
