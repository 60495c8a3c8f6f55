// The sparse optimizer's element update on the GPU (KernelId::kOptimizerApply, phase
// kUpdateElements): a warp per row, the formulas of src/kernels/optimizer_kernel.h
// (step_element), the same sums in the same order as the CPU kernel.
//
// Why not the shared per-item body: with one column per thread, every 4-byte element paid for
// finding its row (a division, then rows[u], first[u], positions[..], the row's bias, each load
// waiting on the one before) and for a 64-float gradient buffer the GPU keeps in local memory. On
// an H200 a 1M x 128 lazy-Adam apply ran at 0.09x the device-to-device copy bandwidth over the
// bytes it touches. Here lane i of a warp reads group i's row, range, first position and bias for
// 32 groups at once, the warp shares them by shuffles, and each lane then loads all of its columns
// of a row (weight, states, gradient: up to 16 independent loads) before it computes and stores.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_optimizer_apply.h"
#include "memloom/error.h"
#include "src/kernels/optimizer_kernel.h"

namespace memloom::cuda {
namespace {

using kernels::DType;
using kernels::OptimizerApplyArgs;
using kernels::OptimizerKind;

constexpr int kLanes = 32;
constexpr unsigned kThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;
// Columns a lane holds at once (lane, lane + 32, ...): a pass covers 128 columns, one row of the
// common dimension 128, with every load of the warp 32 neighbouring elements.
constexpr int kColumnsPerLane = 4;
constexpr int64_t kColumnsPerPass = kLanes * kColumnsPerLane;

// One row: every pass loads, then sums the row's further gradient rows in position order, steps
// and stores. `position` is the row's first gradient position (read by the batch's lanes).
template <OptimizerKind K, DType T, bool kDecoupledDecay>
__device__ void update_row(const OptimizerApplyArgs& args, const kernels::OptimizerStep& step,
                           int64_t row, int64_t from, int64_t to, int64_t position, unsigned lane) {
  char* base = row < args.cached_rows ? args.cache : args.embedding;
  const auto weight_first = static_cast<size_t>(row) * static_cast<size_t>(args.embedding_stride);
  const auto state_first = static_cast<size_t>(row) * static_cast<size_t>(args.state_stride);
  const float* first_gradient = kernels::gradient_row(args, position);
  for (int64_t pass = 0; pass < args.columns; pass += kColumnsPerPass) {
    float weight[kColumnsPerLane], first[kColumnsPerLane], second[kColumnsPerLane];
    float grad[kColumnsPerLane];
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
      weight[j] = first[j] = second[j] = grad[j] = 0;
      if (c >= args.columns) continue;
      const auto column = static_cast<size_t>(c);
      weight[j] = kernels::load_weight<T>(base, weight_first + column);
      if constexpr (kernels::uses_first_state(K)) first[j] = args.state0[state_first + column];
      if constexpr (kernels::uses_second_state(K)) second[j] = args.state1[state_first + column];
      // 0 + g1 + g2 ..., as the CPU kernel sums (0 + -0 is +0).
      grad[j] = 0.0F + first_gradient[column];
    }
    for (int64_t k = from + 1; k < to; ++k) {
      const float* more = kernels::gradient_row(args, args.positions[k]);
#pragma unroll
      for (int j = 0; j < kColumnsPerLane; ++j) {
        const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
        if (c < args.columns) grad[j] += more[c];
      }
    }
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
      if (c >= args.columns) continue;
      const auto column = static_cast<size_t>(c);
      kernels::step_element<K, kDecoupledDecay>(step, grad[j], weight[j], first[j], second[j]);
      if constexpr (kernels::uses_first_state(K)) args.state0[state_first + column] = first[j];
      if constexpr (kernels::uses_second_state(K)) args.state1[state_first + column] = second[j];
      kernels::store_weight<T>(base, weight_first + column, weight[j]);
    }
  }
}

// Warps take batches of 32 groups, grid-stride.
template <OptimizerKind K, DType T, bool kDecoupledDecay>
__global__ void __launch_bounds__(kThreads) update_rows(OptimizerApplyArgs args) {
  const unsigned lane = threadIdx.x % kLanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  for (int64_t batch = warp * kLanes; batch < args.count; batch += warps * kLanes) {
    const int64_t mine = batch + lane;
    int64_t my_row = 0, my_from = 0, my_to = 0, my_position = 0;
    float my_bias1 = 1, my_bias2 = 1;
    if (mine < args.count) {
      my_row = args.rows[mine];
      my_from = args.first[mine];
      my_to = args.first[mine + 1];
      my_position = args.positions[my_from];  // a group has at least one request
      const kernels::OptimizerStep own = kernels::step_of_row<K>(args, my_row);
      my_bias1 = own.bias1;
      my_bias2 = own.bias2;
    }
    // The step's parameters (no row state is read for SGD); each row brings its own biases.
    kernels::OptimizerStep step = kernels::step_of_row<OptimizerKind::kSgd>(args, 0);
    const int64_t left = args.count - batch;
    const int in_batch = left < kLanes ? static_cast<int>(left) : kLanes;
    for (int g = 0; g < in_batch; ++g) {
      const int64_t row = __shfl_sync(kFullWarp, my_row, g);
      const int64_t from = __shfl_sync(kFullWarp, my_from, g);
      const int64_t to = __shfl_sync(kFullWarp, my_to, g);
      const int64_t position = __shfl_sync(kFullWarp, my_position, g);
      step.bias1 = __shfl_sync(kFullWarp, my_bias1, g);
      step.bias2 = __shfl_sync(kFullWarp, my_bias2, g);
      update_row<K, T, kDecoupledDecay>(args, step, row, from, to, position, lane);
    }
  }
}

using RowKernel = void (*)(OptimizerApplyArgs);

template <OptimizerKind K, DType T>
RowKernel row_kernel_with_decay(bool decoupled) {
  if constexpr (K == OptimizerKind::kLazyAdam) {
    if (decoupled) return &update_rows<K, T, true>;
  }
  return &update_rows<K, T, false>;
}

template <OptimizerKind K>
RowKernel row_kernel_of_type(DType type, bool decoupled) {
  switch (type) {
    case DType::kHalf:
      return row_kernel_with_decay<K, DType::kHalf>(decoupled);
    case DType::kBf16:
      return row_kernel_with_decay<K, DType::kBf16>(decoupled);
    default:
      return row_kernel_with_decay<K, DType::kFloat>(decoupled);
  }
}

RowKernel row_kernel(OptimizerKind kind, DType type, bool decoupled) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return row_kernel_of_type<OptimizerKind::kSgd>(type, decoupled);
    case OptimizerKind::kLazyAdam:
      return row_kernel_of_type<OptimizerKind::kLazyAdam>(type, decoupled);
    case OptimizerKind::kRmsProp:
      return row_kernel_of_type<OptimizerKind::kRmsProp>(type, decoupled);
    case OptimizerKind::kAdaGrad:
      return row_kernel_of_type<OptimizerKind::kAdaGrad>(type, decoupled);
  }
  raise(Status::kInvalidInput,
        "unknown optimizer kind " + std::to_string(static_cast<int>(kind)) + " for the GPU apply");
}

// Every instantiation, for loading (CUDA loads a kernel at its first launch, which waits for work
// already queued; see cuda_kernels.cu).
constexpr OptimizerKind kKinds[] = {OptimizerKind::kSgd, OptimizerKind::kLazyAdam,
                                    OptimizerKind::kRmsProp, OptimizerKind::kAdaGrad};
constexpr DType kTypes[] = {DType::kFloat, DType::kHalf, DType::kBf16};

}  // namespace

void launch_optimizer_rows(const kernels::OptimizerApplyArgs& args, cudaStream_t stream) {
  if (args.count <= 0) return;
  const RowKernel kernel = row_kernel(args.kind, args.embedding_type, args.adam_w != 0);
  int device = 0, multiprocessors = 0, resident = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessors)");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  // One wave of resident blocks at most; the batches' grid-stride loop covers the rest.
  const int64_t warps_wanted = (args.count + kLanes - 1) / kLanes;
  const int64_t blocks_wanted = (warps_wanted + kThreads / kLanes - 1) / (kThreads / kLanes);
  const auto blocks = static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(blocks_wanted, int64_t{multiprocessors} * std::max(resident, 1))));
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  check_cuda(cudaGetLastError(), "optimizer apply launch");
}

void load_optimizer_rows() {
  for (const OptimizerKind kind : kKinds) {
    for (const DType type : kTypes) {
      for (const bool decoupled : {false, true}) {
        cudaFuncAttributes attributes{};
        check_cuda(cudaFuncGetAttributes(&attributes, row_kernel(kind, type, decoupled)),
                   "cudaFuncGetAttributes (optimizer apply)");
      }
    }
  }
}

}  // namespace memloom::cuda
