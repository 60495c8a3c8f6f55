#include "bench/gpu/gpu_sampling_reference.h"

#include <cub/device/device_scan.cuh>
#include <stdexcept>
#include <string>

#include "bench/gpu/gpu_cuda.h"

namespace memloom::bench::gpu {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(int64_t items) {
  const int64_t wanted = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(wanted < 65535 * 4 ? wanted : 65535 * 4);
}

__device__ uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void random_ids(T* values, int64_t count, int64_t range, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    values[i] =
        static_cast<T>(mix(seed ^ mix(static_cast<uint64_t>(i))) % static_cast<uint64_t>(range));
  }
}

__global__ void count_samples(const int64_t* row_ptr, const int64_t* centres, int64_t count,
                              int fanout, int32_t* counts) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const int64_t centre = centres[i];
    const int64_t degree = row_ptr[centre + 1] - row_ptr[centre];
    counts[i] = static_cast<int32_t>(degree < fanout ? degree : fanout);
  }
}

__global__ void sample_neighbours(const int64_t* row_ptr, const int32_t* col,
                                  const int64_t* centres, int64_t count, uint64_t seed,
                                  const int32_t* offsets, int32_t* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const int64_t centre = centres[i];
    const int64_t start = row_ptr[centre];
    const int64_t degree = row_ptr[centre + 1] - start;
    const int32_t first = offsets[i];
    const int32_t k = offsets[i + 1] - first;
    if (k == degree) {
      for (int32_t j = 0; j < k; ++j) out[first + j] = col[start + j];
      continue;
    }
    int64_t picked[kReferenceMaxFanout];
    int32_t taken = 0;
    for (int64_t j = degree - k; j < degree; ++j) {
      int64_t choice = static_cast<int64_t>(
          mix(seed ^ mix(static_cast<uint64_t>(centre) * 0x100000001b3ULL + j)) %
          static_cast<uint64_t>(j + 1));
      for (int32_t q = 0; q < taken; ++q) {
        if (picked[q] == choice) {
          choice = j;
          break;
        }
      }
      picked[taken++] = choice;
    }
    for (int32_t j = 0; j < k; ++j) out[first + j] = col[start + picked[j]];
  }
}

// The scratch: counts (count + 1, the last 0) then CUB's temporary storage.
size_t counts_bytes(int64_t centres) {
  return (static_cast<size_t>(centres + 1) * sizeof(int32_t) + 255) / 256 * 256;
}

}  // namespace

void fill_random_ids(int32_t* values, int64_t count, int64_t range, uint64_t seed,
                     cudaStream_t stream) {
  random_ids<<<blocks_for(count), kThreads, 0, stream>>>(values, count, range, seed);
  check_cuda(cudaGetLastError(), "random_ids launch");
}

void fill_random_ids(int64_t* values, int64_t count, int64_t range, uint64_t seed,
                     cudaStream_t stream) {
  random_ids<<<blocks_for(count), kThreads, 0, stream>>>(values, count, range, seed);
  check_cuda(cudaGetLastError(), "random_ids launch");
}

size_t reference_sampler_scratch_bytes(int64_t centres) {
  size_t scan = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<const int32_t*>(nullptr),
                                           static_cast<int32_t*>(nullptr), centres + 1),
             "cub::DeviceScan::ExclusiveSum (size)");
  return counts_bytes(centres) + scan;
}

void reference_sample(const int64_t* row_ptr, const int32_t* col, const int64_t* centres,
                      int64_t count, int fanout, uint64_t seed, int32_t* offsets, int32_t* out,
                      void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  if (fanout <= 0 || fanout > kReferenceMaxFanout) {
    throw std::runtime_error("the reference sampler takes fanouts 1.." +
                             std::to_string(kReferenceMaxFanout));
  }
  auto* counts = static_cast<int32_t*>(scratch);
  count_samples<<<blocks_for(count), kThreads, 0, stream>>>(row_ptr, centres, count, fanout,
                                                            counts);
  check_cuda(cudaGetLastError(), "count_samples launch");
  check_cuda(cudaMemsetAsync(counts + count, 0, sizeof(int32_t), stream), "cudaMemsetAsync");
  size_t temporary = scratch_bytes - counts_bytes(count);
  check_cuda(cub::DeviceScan::ExclusiveSum(static_cast<char*>(scratch) + counts_bytes(count),
                                           temporary, counts, offsets, count + 1, stream),
             "cub::DeviceScan::ExclusiveSum");
  sample_neighbours<<<blocks_for(count), kThreads, 0, stream>>>(row_ptr, col, centres, count, seed,
                                                                offsets, out);
  check_cuda(cudaGetLastError(), "sample_neighbours launch");
}

}  // namespace memloom::bench::gpu
