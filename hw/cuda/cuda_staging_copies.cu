#include "hw/cuda/cuda_staging_copies.h"

#include <algorithm>

#include "hw/cuda/cuda_check.h"

namespace memloom::cuda {
namespace {

constexpr unsigned kThreadsPerCopy = 256;
constexpr size_t kCopiesPerLaunch = 128;

// Copies that travel by value as the kernel's argument (CUDA passes 4 KiB of them).
struct StagingCopyList {
  host::StagingCopy copies[kCopiesPerLaunch];
};

__global__ void copy_each(StagingCopyList list) {
  const host::StagingCopy copy = list.copies[blockIdx.x];
  auto* to = static_cast<unsigned char*>(copy.to);
  const auto* from = static_cast<const unsigned char*>(copy.from);
  uint64_t done = 0;
  // 16-byte words where both sides allow them (pooled buffers and 4 KiB pieces do), then bytes.
  if (((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) & 15) == 0) {
    const uint64_t words = copy.bytes / 16;
    auto* to_words = reinterpret_cast<uint4*>(to);
    const auto* from_words = reinterpret_cast<const uint4*>(from);
    for (uint64_t i = threadIdx.x; i < words; i += blockDim.x) to_words[i] = from_words[i];
    done = words * 16;
  }
  for (uint64_t i = done + threadIdx.x; i < copy.bytes; i += blockDim.x) to[i] = from[i];
}

}  // namespace

void launch_staging_copies(const host::StagingCopy* copies, size_t count, cudaStream_t stream) {
  for (size_t first = 0; first < count; first += kCopiesPerLaunch) {
    const auto launched = static_cast<unsigned>(std::min(count - first, kCopiesPerLaunch));
    StagingCopyList list;
    std::copy_n(copies + first, launched, list.copies);
    copy_each<<<launched, kThreadsPerCopy, 0, stream>>>(list);
    check_cuda(cudaGetLastError(), "staging copy kernel launch");
  }
}

}  // namespace memloom::cuda
