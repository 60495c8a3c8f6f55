#include "hw/cuda/cuda_staging_copies.h"

#include "hw/cuda/cuda_check.h"

namespace memloom::cuda {
namespace {

constexpr unsigned kThreadsPerCopy = 256;

__global__ void copy_each(StagingCopyList list) {
  const uint32_t index = blockIdx.x;
  auto* to = reinterpret_cast<unsigned char*>(list.to[index]);
  const auto* from = reinterpret_cast<const unsigned char*>(list.from[index]);
  const uint64_t bytes = list.bytes[index];
  uint64_t done = 0;
  // 16-byte words where both sides allow them (pooled buffers and 4 KiB pieces do), then bytes.
  if (((list.to[index] | list.from[index]) & 15) == 0) {
    const uint64_t words = bytes / 16;
    auto* to_words = reinterpret_cast<uint4*>(to);
    const auto* from_words = reinterpret_cast<const uint4*>(from);
    for (uint64_t i = threadIdx.x; i < words; i += blockDim.x) to_words[i] = from_words[i];
    done = words * 16;
  }
  for (uint64_t i = done + threadIdx.x; i < bytes; i += blockDim.x) to[i] = from[i];
}

}  // namespace

void launch_staging_copies(const StagingCopyList& list, cudaStream_t stream) {
  if (list.count == 0) return;
  copy_each<<<list.count, kThreadsPerCopy, 0, stream>>>(list);
  check_cuda(cudaGetLastError(), "staging copy kernel launch");
}

}  // namespace memloom::cuda
