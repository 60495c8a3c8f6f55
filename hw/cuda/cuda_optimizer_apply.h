// The sparse optimizer's element update as a warp-per-row CUDA kernel (cuda_optimizer_apply.cu);
// cuda_kernels.cu routes KernelId::kOptimizerApply's kUpdateElements and kUpdateAndAdvance phases
// here.
#pragma once

#include <cuda_runtime_api.h>

#include "src/kernels/optimizer_kernel.h"

namespace memloom::cuda {

// Updates every group of `args` (args.count rows; columns_per_item and items_per_row are the
// per-item body's and are not read).
void launch_optimizer_rows(const kernels::OptimizerApplyArgs& args, cudaStream_t stream);

// Loads every instantiation of the kernel (see load_kernels).
void load_optimizer_rows();

}  // namespace memloom::cuda
