// Launches the shared kernel table (hw/hal/kernels.h) as CUDA grids over the same single-source
// bodies (src/ops/) that the emulated backend runs on CPU threads.
#pragma once

#include <cuda_runtime_api.h>

#include "hw/hal/kernels.h"

namespace memloom::cuda {

// Enqueues `launch` on `stream` (which belongs to the current device). Throws kInvalidInput for an
// id outside the table or an argument struct of the wrong size, kDevice if the launch fails.
void launch_kernel(const hal::KernelLaunch& launch, cudaStream_t stream);

}  // namespace memloom::cuda
