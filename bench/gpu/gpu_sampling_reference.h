// The sampling figure's plain CUDA side (gpu_sampling_reference.cu): the random parts of its
// power-law graph, generated on the GPU, and the reference sampler memloom is compared with,
// written as a CUDA programmer would without a library: counts, CUB's exclusive sum, then one
// thread per centre drawing min(fanout, degree) distinct neighbours with Floyd's algorithm.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memloom::bench::gpu {

// The largest fanout the reference sampler takes (its picks live in a per-thread array).
constexpr int kReferenceMaxFanout = 64;

// values[i] = a hash of (seed, i) modulo `range`, for i < count.
void fill_random_ids(int32_t* values, int64_t count, int64_t range, uint64_t seed,
                     cudaStream_t stream);
void fill_random_ids(int64_t* values, int64_t count, int64_t range, uint64_t seed,
                     cudaStream_t stream);

// Device scratch the reference sampler needs for `centres` centres, and the sampler: writes the
// offsets (centres + 1, INT32) and the sampled neighbours at them (out: at least centres * fanout
// entries). Enqueued on `stream`, no host wait.
size_t reference_sampler_scratch_bytes(int64_t centres);
void reference_sample(const int64_t* row_ptr, const int32_t* col, const int64_t* centres,
                      int64_t count, int fanout, uint64_t seed, int32_t* offsets, int32_t* out,
                      void* scratch, size_t scratch_bytes, cudaStream_t stream);

}  // namespace memloom::bench::gpu
