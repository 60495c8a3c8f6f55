#include "hw/cuda/cuda_buffer_staging.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_staging_copies.h"
#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

// Page-locked buffers outlive the staging that allocated them and serve the next one: freeing one
// (cudaFreeHost) waits for the whole device, so a transport destroyed while a stream's host
// function waits for its caller (TRANS's queued transfers outlive their instance) would wait for
// good; allocating one waits likewise. Never freed: at exit CUDA may be gone first.
struct KeptBuffers {
  std::mutex mutex;
  std::multimap<size_t, void*> by_size;
};

KeptBuffers& kept_buffers() {
  static auto* kept = new KeptBuffers;
  return *kept;
}

}  // namespace

CudaBufferStaging::CudaBufferStaging(int device) : device_(device) {
  DeviceGuard guard(device_);
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaBufferStaging::~CudaBufferStaging() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

bool CudaBufferStaging::needs_staging(const void* pointer) const {
  return is_device_pointer(pointer);
}

bool CudaBufferStaging::kernel_reaches(const host::StagingCopy& copy) {
  const auto to = reinterpret_cast<uintptr_t>(copy.to);
  const auto from = reinterpret_cast<uintptr_t>(copy.from);
  const void* device_side = nullptr;
  {
    std::lock_guard<std::mutex> lock(buffers_mutex_);
    auto addressable = [&](uintptr_t address) {
      const auto* buffer = buffers_.find_containing(address, copy.bytes);
      return buffer != nullptr && buffer->payload;
    };
    if (addressable(from)) {
      device_side = copy.to;
    } else if (addressable(to)) {
      device_side = copy.from;
    }
  }
  if (device_side == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, device_side) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice && attributes.device == device_;
}

void CudaBufferStaging::enqueue(const host::StagingCopy* copies, size_t count) {
  // The kernel pays where pieces are many and small; large ones go faster by the copy engine.
  constexpr size_t kKernelMinCopies = 8;
  constexpr size_t kKernelMaxAverageBytes = size_t{64} << 10;
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += copies[i].bytes;
  bool by_kernel = count >= kKernelMinCopies && total / count <= kKernelMaxAverageBytes;
  for (size_t i = 0; by_kernel && i < count; ++i) by_kernel = kernel_reaches(copies[i]);
  if (by_kernel) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true)) {
      MEMLOOM_LOG(kDebug, "CUDA staging: " << count << " small copies by kernel, 128 a launch");
    }
    launch_staging_copies(copies, count, stream_);
    return;
  }
#if CUDART_VERSION >= 13000
  if (count > 1) {
    std::vector<void*> to(count);
    std::vector<const void*> from(count);
    std::vector<size_t> bytes(count);
    for (size_t i = 0; i < count; ++i) {
      to[i] = copies[i].to;
      from[i] = copies[i].from;
      bytes[i] = copies[i].bytes;
    }
    cudaMemcpyAttributes attributes{};
    attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t first_with_attributes = 0;
    if (cudaMemcpyBatchAsync(to.data(), from.data(), bytes.data(), count, &attributes,
                             &first_with_attributes, 1, stream_) == cudaSuccess) {
      return;
    }
    (void)cudaGetLastError();  // a driver without it: one call a copy, as below
  }
#endif
  for (size_t i = 0; i < count; ++i) {
    check_cuda(
        cudaMemcpyAsync(copies[i].to, copies[i].from, copies[i].bytes, cudaMemcpyDefault, stream_),
        "cudaMemcpyAsync (staging device memory)");
  }
}

void CudaBufferStaging::copy_all(const std::vector<host::StagingCopy>& copies, Deadline deadline) {
  if (copies.empty()) return;
  DeviceGuard guard(device_);
  // In batches of copies that touch nothing an earlier copy of theirs touched (a batch orders
  // nothing among its copies); the batches run in stream order, so copies run as listed.
  base::RangeMap<> touched;
  size_t first = 0;
  for (size_t i = 0; i < copies.size(); ++i) {
    const auto to = reinterpret_cast<uintptr_t>(copies[i].to);
    const auto from = reinterpret_cast<uintptr_t>(copies[i].from);
    if (touched.overlapping(to, copies[i].bytes) != nullptr ||
        touched.overlapping(from, copies[i].bytes) != nullptr) {
      enqueue(&copies[first], i - first);
      first = i;
      touched = {};
    }
    touched.insert(to, copies[i].bytes);
    touched.insert(from, copies[i].bytes);  // refused if it overlaps `to`: undefined anyway
  }
  enqueue(&copies[first], copies.size() - first);
  cudaError_t state = cudaErrorNotReady;
  const bool done = poll_until(
      [&] {
        state = cudaStreamQuery(stream_);
        if (state == cudaErrorNotReady) (void)cudaGetLastError();
        return state != cudaErrorNotReady;
      },
      deadline);
  if (!done) raise(Status::kTimeout, "staging device memory through host memory: deadline passed");
  if (state != cudaSuccess) {
    raise_cuda(cudaGetLastError(), "staging device memory through host memory");
  }
}

void* CudaBufferStaging::allocate_host(size_t bytes) {
  DeviceGuard guard(device_);
  void* buffer = nullptr;
  {
    KeptBuffers& kept = kept_buffers();
    std::lock_guard<std::mutex> lock(kept.mutex);
    if (auto it = kept.by_size.find(bytes); it != kept.by_size.end()) {
      buffer = it->second;
      kept.by_size.erase(it);
    }
  }
  // Portable: the copies may reach any device of the process by unified addressing. Mapped: the
  // staging kernel reads and writes it, at the address the host uses where the device says so.
  if (buffer == nullptr) {
    check_cuda(cudaHostAlloc(&buffer, bytes, cudaHostAllocPortable | cudaHostAllocMapped),
               "cudaHostAlloc (staging)");
  }
  void* on_device = nullptr;
  const bool addressable =
      cudaHostGetDevicePointer(&on_device, buffer, 0) == cudaSuccess && on_device == buffer;
  if (!addressable) {
    (void)cudaGetLastError();  // copies through it go by the copy engine
    MEMLOOM_LOG(kDebug,
                "CUDA staging: a page-locked buffer has no device address equal to its "
                "host address; its copies go by the copy engine");
  }
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  buffers_.insert(reinterpret_cast<uintptr_t>(buffer), bytes, addressable);
  return buffer;
}

void CudaBufferStaging::free_host(void* buffer) noexcept {
  const auto start = reinterpret_cast<uintptr_t>(buffer);
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(buffers_mutex_);
    const auto* allocated = buffers_.find(start);
    if (allocated == nullptr) return;  // not one of allocate_host's
    bytes = allocated->size;
    buffers_.erase(start);
  }
  KeptBuffers& kept = kept_buffers();
  std::lock_guard<std::mutex> lock(kept.mutex);
  kept.by_size.emplace(bytes, buffer);
}

}  // namespace memloom::cuda
