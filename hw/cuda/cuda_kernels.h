// Launches the shared kernel table (hw/hal/kernels.h) as CUDA grids over the same single-source
// bodies (src/kernels/) that the emulated backend runs on CPU threads.
#pragma once

#include <cuda_runtime_api.h>

#include "hw/hal/kernels.h"

namespace memloom::cuda {

// Loads every kernel of the table on the current device, so no later launch waits for a module
// load (see cuda_kernels.cu).
void load_kernels();

// Enqueues `launch` on `stream` (which belongs to the current device). Throws kInvalidInput for an
// id outside the table or an argument struct of the wrong size, kDevice if the launch fails.
void launch_kernel(const hal::KernelLaunch& launch, cudaStream_t stream);

}  // namespace memloom::cuda
