// Stream and Event of the CUDA backend: a CUDA stream (created here, or a caller's cudaStream_t
// adopted without taking ownership) and CUDA events. Every wait polls against its deadline, since
// cudaStreamSynchronize and cudaEventSynchronize cannot be bounded.
//
// Host functions may call CUDA (the core's do: staging copies, transport transfers), which a
// cudaLaunchHostFunc callback must not. So the callback only hands the function to a worker
// thread and blocks, holding the stream in order, until the worker has run it. The worker belongs
// to the native stream, not to this object: every Stream over one cudaStream_t (the one that
// created it, any that adopted it) shares it, so an adopted wrapper can go at once while its
// functions still wait in the stream, and an error they raise surfaces at the next synchronize()
// through any of them.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "hw/hal/stream.h"

namespace memloom::cuda {

class HostFunctionWorker;

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
  // An owned stream first waits (bounded) for its work; an adopted one leaves it running.
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  void submit(hal::StreamWork work) override;
  std::unique_ptr<hal::Event> record() override;
  void wait(hal::Event& event) override;
  void synchronize(Deadline deadline) override;
  void* native_handle() override { return stream_; }

 private:
  const int device_;
  cudaStream_t stream_ = nullptr;
  const bool owned_;
  std::shared_ptr<HostFunctionWorker> worker_;
};

}  // namespace memloom::cuda
