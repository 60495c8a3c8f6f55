// The CUDA runner of KernelId::kGroupRows (src/kernels/row_grouping_kernel.h): CUB's radix sort of
// the requests by key, then one group per run of equal keys.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memloom::cuda {

// Scratch bytes a grouping of `count` requests needs (on the current device).
size_t group_rows_scratch_bytes(int64_t count);

// Enqueues the grouping; `items` must be 1 (the whole list is one item).
void launch_group_rows(const void* args, size_t items, cudaStream_t stream);

// Runs one tiny grouping, so CUB's kernels are loaded before any stream needs them.
void load_group_rows();

}  // namespace memloom::cuda
