#include "hw/cuda/host_function_worker.h"

#include <map>
#include <thread>

#include "hw/cuda/cuda_check.h"

namespace memloom::cuda {
namespace {

std::mutex g_registry_mutex;
// Weak: a worker lives while a Stream over its native stream or a pending call holds it.
std::map<cudaStream_t, std::weak_ptr<HostFunctionWorker>>* g_registry = nullptr;

}  // namespace

struct HostFunctionWorker::Call {
  std::shared_ptr<HostFunctionWorker> worker;  // keeps the worker until the call is done
  std::function<void()> fn;
  std::mutex mutex;
  std::condition_variable done_signal;
  bool done = false;
};

std::shared_ptr<HostFunctionWorker> HostFunctionWorker::of(cudaStream_t stream, int device) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  if (g_registry == nullptr) {
    g_registry = new std::map<cudaStream_t, std::weak_ptr<HostFunctionWorker>>();  // outlives
  }                                                                                // static dtors
  auto& slot = (*g_registry)[stream];
  std::shared_ptr<HostFunctionWorker> worker = slot.lock();
  if (!worker) {
    worker = std::shared_ptr<HostFunctionWorker>(new HostFunctionWorker(device));
    slot = worker;
  }
  return worker;
}

HostFunctionWorker::~HostFunctionWorker() {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  if (g_registry == nullptr) return;
  for (auto it = g_registry->begin(); it != g_registry->end(); ++it) {
    if (it->second.expired()) {
      g_registry->erase(it);
      break;
    }
  }
}

void HostFunctionWorker::enqueue(cudaStream_t stream, std::function<void()> fn) {
  auto* call = new Call{shared_from_this(), std::move(fn), {}, {}, false};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pending_;
  }
  cudaError_t result = cudaLaunchHostFunc(stream, &HostFunctionWorker::on_stream_reaches, call);
  if (result != cudaSuccess) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    delete call;
    raise_cuda(result, "cudaLaunchHostFunc");
  }
}

// Runs on CUDA's callback thread once the stream reaches the call: hands it to the worker's
// thread and holds the stream until it is done. Makes no CUDA call.
void CUDART_CB HostFunctionWorker::on_stream_reaches(void* opaque) {
  auto* call = static_cast<Call*>(opaque);
  std::shared_ptr<HostFunctionWorker> worker = call->worker;
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(worker->mutex_);
    worker->ready_.push_back(call);
    start = !worker->running_;
    worker->running_ = true;
  }
  if (start) {
    // A thread per busy spell: it leaves when nothing is pending, so no worker thread outlives
    // its stream's work (or keeps a process from exiting).
    std::thread([worker] { worker->run(); }).detach();
  } else {
    worker->wake_.notify_all();
  }
  {
    std::unique_lock<std::mutex> lock(call->mutex);
    call->done_signal.wait(lock, [call] { return call->done; });
  }
  delete call;
}

void HostFunctionWorker::run() {
  (void)cudaSetDevice(device_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait_for(lock, std::chrono::milliseconds(100),
                   [this] { return !ready_.empty() || pending_ == 0; });
    if (ready_.empty()) {
      if (pending_ == 0) {
        running_ = false;
        return;
      }
      continue;
    }
    Call* call = ready_.front();
    ready_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      call->fn();
    } catch (...) {
      error = std::current_exception();
    }
    // The error is kept before the stream is released: once released, the stream may reach a
    // synchronize() that returns and asks take_error() at once (seen on an H200 under load).
    if (error) {
      std::lock_guard<std::mutex> relock(mutex_);
      if (!first_error_) first_error_ = error;
    }
    {
      std::lock_guard<std::mutex> call_lock(call->mutex);
      call->done = true;
    }
    call->done_signal.notify_all();
    lock.lock();
    --pending_;
  }
}

std::exception_ptr HostFunctionWorker::take_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::exception_ptr error;
  std::swap(error, first_error_);
  return error;
}

}  // namespace memloom::cuda
