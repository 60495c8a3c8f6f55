// The apply figure's plain CUDA side (gpu_apply_reference.cu): one lazy-Adam step over every row
// of a FLOAT table, written as a CUDA programmer would for this case alone (rows in order, each
// row's gradient row given, a warp per row, 16-byte loads), no grouping and no library. Its time
// is what memloom's optimizer kernel (the "optimizer_apply.update_rows" phase) could reach.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace memloom::bench::gpu {

// weight, m, v: rows x dim floats; grads: rows x dim, row r's gradient at grad_row[r]. dim must be
// a multiple of 4 and every array 16-byte aligned. Enqueued on `stream`, no host wait.
void reference_adam_step(float* weight, float* m, float* v, const float* grads,
                         const int64_t* grad_row, int64_t rows, int dim, cudaStream_t stream);

}  // namespace memloom::bench::gpu
