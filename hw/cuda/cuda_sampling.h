// Unweighted neighbour sampling as a warp-per-32-centres CUDA kernel (cuda_sampling.cu);
// cuda_kernels.cu routes KernelId::kSampleNeighbours here when samples_by_warps(), and to the
// per-item body (src/kernels/sampling_kernel.h) otherwise. Both write the same samples.
#pragma once

#include <cuda_runtime_api.h>

#include "src/kernels/sampling_kernel.h"

namespace memloom::cuda {

// Whether the warp kernel serves `args`: unweighted, with 1..32 samples per centre (a lane each).
bool samples_by_warps(const kernels::SampleArgs& args);

// Samples every centre of `args` (offsets filled in); at most `max_blocks` blocks of the grid.
void launch_sample_by_warps(const kernels::SampleArgs& args, cudaStream_t stream, int max_blocks);

// Loads the kernel (see load_kernels).
void load_sample_by_warps();

}  // namespace memloom::cuda
