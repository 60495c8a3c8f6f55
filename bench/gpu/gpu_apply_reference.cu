#include "bench/gpu/gpu_apply_reference.h"

#include "bench/gpu/gpu_cuda.h"

namespace memloom::bench::gpu {
namespace {

constexpr unsigned kThreads = 256;
constexpr int kLanes = 32;
// Lazy Adam's defaults (WholeMemory's), with a fixed step's bias corrections.
constexpr float kLr = 0.01F, kBeta1 = 0.9F, kBeta2 = 0.999F, kEpsilon = 1e-8F;
constexpr float kBias1 = 1 - kBeta1, kBias2 = 1 - kBeta2;

__device__ void step(float g, float& w, float& m, float& v) {
  m = kBeta1 * m + (1 - kBeta1) * g;
  v = kBeta2 * v + (1 - kBeta2) * g * g;
  w -= kLr * (m / kBias1) / (sqrtf(v / kBias2) + kEpsilon);
}

__global__ void __launch_bounds__(kThreads)
    adam_rows(float* weight, float* m, float* v, const float* grads, const int64_t* grad_row,
              int64_t rows, int dim) {
  const int lane = static_cast<int>(threadIdx.x % kLanes);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
       row < rows; row += warps) {
    const size_t at = static_cast<size_t>(row) * dim;
    const size_t from = static_cast<size_t>(grad_row[row]) * dim;
    for (int c = 4 * lane; c < dim; c += 4 * kLanes) {
      float4 w = *reinterpret_cast<const float4*>(weight + at + c);
      float4 mm = *reinterpret_cast<const float4*>(m + at + c);
      float4 vv = *reinterpret_cast<const float4*>(v + at + c);
      const float4 g = *reinterpret_cast<const float4*>(grads + from + c);
      step(g.x, w.x, mm.x, vv.x);
      step(g.y, w.y, mm.y, vv.y);
      step(g.z, w.z, mm.z, vv.z);
      step(g.w, w.w, mm.w, vv.w);
      *reinterpret_cast<float4*>(weight + at + c) = w;
      *reinterpret_cast<float4*>(m + at + c) = mm;
      *reinterpret_cast<float4*>(v + at + c) = vv;
    }
  }
}

}  // namespace

void reference_adam_step(float* weight, float* m, float* v, const float* grads,
                         const int64_t* grad_row, int64_t rows, int dim, cudaStream_t stream) {
  // A row per warp, as many warps as rows up to a large grid; the loop covers the rest.
  const int64_t wanted = (rows * kLanes + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
  adam_rows<<<blocks, kThreads, 0, stream>>>(weight, m, v, grads, grad_row, rows, dim);
  check_cuda(cudaGetLastError(), "reference Adam launch");
}

}  // namespace memloom::bench::gpu
