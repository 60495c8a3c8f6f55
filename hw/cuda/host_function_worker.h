// Runs a CUDA stream's host functions on a thread of its own (see cuda_stream.h for why), one
// worker per native stream, shared by every hal::Stream over it.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

namespace memloom::cuda {

class HostFunctionWorker : public std::enable_shared_from_this<HostFunctionWorker> {
 public:
  // The worker of `stream` (created on first use; `device` is made current on its thread).
  static std::shared_ptr<HostFunctionWorker> of(cudaStream_t stream, int device);
  ~HostFunctionWorker();

  // Enqueues `fn` on `stream` (which must be this worker's). It runs when the stream reaches it.
  void enqueue(cudaStream_t stream, std::function<void()> fn);
  // The first exception a function threw since the last call, cleared (null if none).
  std::exception_ptr take_error();

 private:
  struct Call;
  explicit HostFunctionWorker(int device) : device_(device) {}
  static void CUDART_CB on_stream_reaches(void* call);
  void run();

  const int device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Call*> ready_;  // reached by the stream, waiting for the thread
  size_t pending_ = 0;       // enqueued and not yet finished
  bool running_ = false;     // a thread is serving ready_
  std::exception_ptr first_error_;
};

}  // namespace memloom::cuda
