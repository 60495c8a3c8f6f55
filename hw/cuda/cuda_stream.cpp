#include "hw/cuda/cuda_stream.h"

#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_kernels.h"
#include "memloom/error.h"
#include "src/core/log.h"

namespace memloom::cuda {

// ------------------------------------------------------------------------------------------------

CudaEvent::CudaEvent(int device) : device_(device) {
  DeviceGuard guard(device_);
  check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
}

CudaEvent::~CudaEvent() {
  (void)cudaEventDestroy(event_);
}

bool CudaEvent::query() {
  cudaError_t result = cudaEventQuery(event_);
  if (result == cudaSuccess) return true;
  if (result == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  raise_cuda(result, "cudaEventQuery (an operation before the event failed)");
}

void CudaEvent::synchronize(Deadline deadline) {
  if (!poll_until([this] { return query(); }, deadline)) {
    raise(Status::kTimeout, "waiting for CUDA work: the deadline passed before it completed");
  }
}

// ------------------------------------------------------------------------------------------------

struct CudaStream::HostCall {
  CudaStream* stream;
  std::function<void()> fn;
  std::mutex mutex;
  std::condition_variable done_signal;
  bool done = false;
};

CudaStream::CudaStream(int device) : device_(device), owned_(true) {
  DeviceGuard guard(device_);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaStream::CudaStream(int device, cudaStream_t adopted)
    : device_(device), stream_(adopted), owned_(false) {}

CudaStream::~CudaStream() {
  try {
    synchronize(Deadline::after(std::chrono::seconds(60)));
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "destroying a CUDA stream whose work failed or hung: " << error.what());
  } catch (...) {
    MEMLOOM_LOG(kWarn, "destroying a CUDA stream whose host function threw a non-exception");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (owned_) (void)cudaStreamDestroy(stream_);
}

void CudaStream::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  MEMLOOM_CHECK_ARG(dst != nullptr && src != nullptr, "copy needs non-null addresses");
  DeviceGuard guard(device_);
  // cudaMemcpyDefault: unified addressing tells device, mapped GVA and host memory apart.
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
}

void CudaStream::launch(const hal::KernelLaunch& launch) {
  DeviceGuard guard(device_);
  launch_kernel(launch, stream_);
}

void CudaStream::host_function(std::function<void()> fn) {
  MEMLOOM_CHECK_ARG(fn != nullptr, "host_function needs a function");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { run_worker(); });
  }
  auto* call = new HostCall{this, std::move(fn), {}, {}, false};
  DeviceGuard guard(device_);
  cudaError_t result = cudaLaunchHostFunc(stream_, &CudaStream::on_stream_reaches, call);
  if (result != cudaSuccess) {
    delete call;
    raise_cuda(result, "cudaLaunchHostFunc");
  }
}

// Runs on CUDA's callback thread once the stream reaches the call: hands it to the worker and
// holds the stream until it is done. Makes no CUDA call.
void CUDART_CB CudaStream::on_stream_reaches(void* opaque) {
  auto* call = static_cast<HostCall*>(opaque);
  CudaStream* stream = call->stream;
  {
    std::lock_guard<std::mutex> lock(stream->mutex_);
    stream->calls_.push_back(call);
  }
  stream->wake_.notify_all();
  {
    std::unique_lock<std::mutex> lock(call->mutex);
    call->done_signal.wait(lock, [call] { return call->done; });
  }
  delete call;
}

void CudaStream::run_worker() {
  (void)cudaSetDevice(device_);
  while (true) {
    HostCall* call = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
      if (calls_.empty()) return;  // stopping, and nothing is waiting on us
      call = calls_.front();
      calls_.pop_front();
    }
    try {
      call->fn();
    } catch (...) {
      keep_error(std::current_exception());
    }
    {
      std::lock_guard<std::mutex> lock(call->mutex);
      call->done = true;
    }
    call->done_signal.notify_all();
  }
}

void CudaStream::keep_error(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!first_error_) first_error_ = std::move(error);
}

std::unique_ptr<hal::Event> CudaStream::record() {
  auto event = std::make_unique<CudaEvent>(device_);
  DeviceGuard guard(device_);
  check_cuda(cudaEventRecord(event->native(), stream_), "cudaEventRecord");
  return event;
}

void CudaStream::wait(hal::Event& event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(&event);
  MEMLOOM_CHECK_ARG(cuda_event != nullptr, "wait: the event belongs to another backend");
  DeviceGuard guard(device_);
  check_cuda(cudaStreamWaitEvent(stream_, cuda_event->native(), 0), "cudaStreamWaitEvent");
}

void CudaStream::synchronize(Deadline deadline) {
  {
    auto done = record();
    done->synchronize(deadline);
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(error, first_error_);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace memloom::cuda
