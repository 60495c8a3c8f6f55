// The CUDA runner of KernelId::kScanCounts (src/kernels/count_scan_kernel.h): CUB's exclusive
// sum over the counts.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memloom::cuda {

// Scratch bytes a scan of `count` counts needs (on the current device).
size_t scan_counts_scratch_bytes(int64_t count);

// Enqueues the scan; `items` must be 1 (the whole list is one item).
void launch_scan_counts(const void* args, size_t items, cudaStream_t stream);

// Runs one tiny scan, so CUB's kernels are loaded before any stream needs them.
void load_scan_counts();

}  // namespace memloom::cuda
