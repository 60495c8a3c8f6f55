#include "hw/cuda/cuda_stream.h"

#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_kernels.h"
#include "hw/cuda/cuda_phase_times.h"
#include "hw/cuda/host_function_worker.h"
#include "hw/cuda/host_registrations.h"
#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::cuda {

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

namespace {

// Loads the kernel table once per device (see load_kernels()).
void load_kernels_once(int device) {
  static std::mutex mutex;
  static std::set<int> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(device) != 0) return;
  load_kernels();
  loaded.insert(device);
}

}  // namespace

CudaStream::CudaStream(int device) : device_(device), owned_(true) {
  DeviceGuard guard(device_);
  load_kernels_once(device_);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  worker_ = HostFunctionWorker::of(stream_, device_);
}

CudaStream::CudaStream(int device, cudaStream_t adopted)
    : device_(device), stream_(adopted), owned_(false) {
  DeviceGuard guard(device_);
  load_kernels_once(device_);
  worker_ = HostFunctionWorker::of(stream_, device_);
}

CudaStream::~CudaStream() {
  if (!owned_) return;  // the caller's stream keeps running; its worker lives while it has work
  try {
    synchronize(Deadline::after(std::chrono::seconds(60)));
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "destroying a CUDA stream whose work failed or hung: " << error.what());
  } catch (...) {
    MEMLOOM_LOG(kWarn, "destroying a CUDA stream whose host function threw a non-exception");
  }
  (void)cudaStreamDestroy(stream_);
}

void CudaStream::submit(hal::StreamWork work) {
  DeviceGuard guard(device_);
  switch (work.kind) {
    case hal::StreamWorkKind::kCopy: {
      PhaseTimer timer("copy", stream_);
      // cudaMemcpyDefault: unified addressing tells device, mapped GVA and host memory apart.
      copy_within_registrations(
          work.dst, work.src, work.bytes, [this](void* to, const void* from, size_t bytes) {
            check_cuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_),
                       "cudaMemcpyAsync");
          });
      return;
    }
    case hal::StreamWorkKind::kKernel:
      launch_kernel(work.kernel, stream_);
      return;
    case hal::StreamWorkKind::kHostFunction:
      worker_->enqueue(stream_, std::move(work.fn));
      return;
  }
  raise(Status::kInvalidInput, "CUDA stream: unknown kind of stream work");
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
  if (std::exception_ptr error = worker_->take_error()) std::rethrow_exception(error);
}

}  // namespace memloom::cuda
