// The sparse optimizer's element update on the GPU (KernelId::kOptimizerApply, phases
// kUpdateElements and kUpdateAndAdvance): a warp per group (distinct row), the formulas of
// src/kernels/optimizer_kernel.h (step_element), the same sums in the same order as the CPU kernel.
//
// Why not the shared per-item body: with one column per thread, every 4-byte element paid for
// finding its row (a division, then rows[u], first[u], positions[..], the row's bias, each load
// waiting on the one before) and for a 64-float gradient buffer the GPU keeps in local memory. On
// an H200 a 1M x 128 lazy-Adam apply ran at 0.09x the device-to-device copy bandwidth over the
// bytes it touches. Here a warp takes a row, each lane loads all of its columns of the row
// (weight, states, gradient) before it computes and stores, and the metadata of the warp's next
// rows is loaded while this row is (see update_groups). A FLOAT table with 16-byte aligned rows
// (the common case) moves 4 neighbouring columns per load (update_pass_vector): a quarter of the
// memory instructions and address arithmetic.
//
// The launch covers `count` groups, or an upper bound of them when the grouping left its count in
// device memory (OptimizerApplyArgs::group_count), so a one-rank apply is enqueued without waiting
// for the grouping; the grid is one wave of resident blocks either way.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

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
// Columns a lane holds at once (lane, lane + 32, ...): a pass covers 128 columns, one row of the
// common dimension 128, with every load of the warp 32 neighbouring elements.
constexpr int kColumnsPerLane = 4;
constexpr int64_t kColumnsPerPass = kLanes * kColumnsPerLane;

// Blocks of 256 threads a multiprocessor keeps resident (the kernel is held to 80 registers).
// Measured on an H100 (1M x 128 lazy Adam, 2026-12-06): 3 blocks without spills took the update
// to 0.86x of a plain lazy-Adam kernel over the same bytes; 4 blocks (64 registers) spilled about
// 100 bytes a thread and reached 0.64x; the earlier kernel, 32 rows a warp with two in flight at
// 122 registers (2 blocks), 0.73x; a warp per row without the metadata read ahead, 0.72-0.80x.
constexpr int kMinBlocksPerMultiprocessor = 3;

// What a warp's lanes need of one group (row).
struct RowRef {
  char* base;           // the table or the cache
  size_t weight_first;  // elements
  size_t state_first;
  const float* first_gradient;
  int64_t from, to;  // positions of the row's gradients
  kernels::OptimizerStep step;
};

// One pass of a lane over a row: load everything, sum the row's further gradient rows in position
// order, then step and store.
template <OptimizerKind K, DType T, bool kDecoupledDecay>
__device__ void update_pass(const OptimizerApplyArgs& args, const RowRef& ref, int64_t pass,
                            unsigned lane) {
  float weight[kColumnsPerLane], first[kColumnsPerLane];
  float second[kColumnsPerLane], grad[kColumnsPerLane];
#pragma unroll
  for (int j = 0; j < kColumnsPerLane; ++j) {
    const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
    weight[j] = first[j] = second[j] = grad[j] = 0;
    if (c >= args.columns) continue;
    const auto column = static_cast<size_t>(c);
    weight[j] = kernels::load_weight<T>(ref.base, ref.weight_first + column);
    if constexpr (kernels::uses_first_state(K)) first[j] = args.state0[ref.state_first + column];
    if constexpr (kernels::uses_second_state(K)) second[j] = args.state1[ref.state_first + column];
    // 0 + g1 + g2 ..., as the CPU kernel sums (0 + -0 is +0).
    grad[j] = 0.0F + ref.first_gradient[column];
  }
  for (int64_t k = ref.from + 1; k < ref.to; ++k) {
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
    kernels::step_element<K, kDecoupledDecay>(ref.step, grad[j], weight[j], first[j], second[j]);
    if constexpr (kernels::uses_first_state(K)) args.state0[ref.state_first + column] = first[j];
    if constexpr (kernels::uses_second_state(K)) args.state1[ref.state_first + column] = second[j];
    kernels::store_weight<T>(ref.base, ref.weight_first + column, weight[j]);
  }
}

// The pass of a float table whose rows, states and gradients are 16-byte aligned and whose width
// is a multiple of 4: lane l holds columns [4l, 4l + 4) of the pass (128 columns), each array of
// the row one 16-byte load or store. The same sums and steps as update_pass, element by element.
template <OptimizerKind K, bool kDecoupledDecay>
__device__ void update_pass_vector(const OptimizerApplyArgs& args, const RowRef& ref, int64_t pass,
                                   unsigned lane) {
  const int64_t c = pass + 4 * static_cast<int64_t>(lane);
  if (c >= args.columns) return;  // all four columns or none
  const auto column = static_cast<size_t>(c);
  auto* weight_at =
      reinterpret_cast<float4*>(reinterpret_cast<float*>(ref.base) + ref.weight_first + column);
  float4 weight = *weight_at;
  float4 first = make_float4(0, 0, 0, 0), second = make_float4(0, 0, 0, 0);
  if constexpr (kernels::uses_first_state(K)) {
    first = *reinterpret_cast<const float4*>(args.state0 + ref.state_first + column);
  }
  if constexpr (kernels::uses_second_state(K)) {
    second = *reinterpret_cast<const float4*>(args.state1 + ref.state_first + column);
  }
  const float4 g = *reinterpret_cast<const float4*>(ref.first_gradient + column);
  // 0 + g1 + g2 ..., as the CPU kernel sums (0 + -0 is +0).
  float4 grad = make_float4(0.0F + g.x, 0.0F + g.y, 0.0F + g.z, 0.0F + g.w);
  for (int64_t k = ref.from + 1; k < ref.to; ++k) {
    const float4 more =
        *reinterpret_cast<const float4*>(kernels::gradient_row(args, args.positions[k]) + column);
    grad.x += more.x;
    grad.y += more.y;
    grad.z += more.z;
    grad.w += more.w;
  }
  kernels::step_element<K, kDecoupledDecay>(ref.step, grad.x, weight.x, first.x, second.x);
  kernels::step_element<K, kDecoupledDecay>(ref.step, grad.y, weight.y, first.y, second.y);
  kernels::step_element<K, kDecoupledDecay>(ref.step, grad.z, weight.z, first.z, second.z);
  kernels::step_element<K, kDecoupledDecay>(ref.step, grad.w, weight.w, first.w, second.w);
  if constexpr (kernels::uses_first_state(K)) {
    *reinterpret_cast<float4*>(args.state0 + ref.state_first + column) = first;
  }
  if constexpr (kernels::uses_second_state(K)) {
    *reinterpret_cast<float4*>(args.state1 + ref.state_first + column) = second;
  }
  *weight_at = weight;
}

// What a warp needs of one group before it can load the row. Every lane reads the same addresses
// (one transaction each), so no lane waits on a shuffle of another's load.
struct GroupMeta {
  int64_t row, from, to, position;
  float beta1_power, beta2_power;  // lazy Adam's row state before this step
};

// The first half of a group's metadata (rows, first): independent loads.
__device__ void load_group_head(const OptimizerApplyArgs& args, int64_t group, GroupMeta& meta) {
  meta.row = args.rows[group];
  meta.from = args.first[group];
  meta.to = args.first[group + 1];
}

// The second half, whose addresses come from the first: the first gradient's position and the
// row's state.
template <OptimizerKind K>
__device__ void load_group_tail(const OptimizerApplyArgs& args, GroupMeta& meta) {
  meta.position = args.positions[meta.from];  // a group has at least one request
  meta.beta1_power = meta.beta2_power = 0;
  if constexpr (K == OptimizerKind::kLazyAdam) {
    meta.beta1_power = args.row_state[2 * meta.row];
    meta.beta2_power = args.row_state[2 * meta.row + 1];
  }
}

// A warp per group, grid-stride, one row in flight per warp, each lane holding 4 columns of each
// array. The metadata is read ahead: the head of the group two strides on and the tail of the
// next one are loaded while this group's row is, so a warp waits about one memory latency per row
// instead of three (rows and first, then positions and row state, then the row). Lazy Adam's row
// state is advanced by lane 0 once every lane has read it (kUpdateAndAdvance; each row is one
// group of the launch, so no other warp reads it).
template <OptimizerKind K, DType T, bool kDecoupledDecay, bool kVector>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerMultiprocessor)
    update_groups(OptimizerApplyArgs args) {
  const unsigned lane = threadIdx.x % kLanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  // The grouping's count, read on the device: the host launched over an upper bound rather than
  // wait to read it back.
  const int64_t count = kernels::live_groups(args);
  if (warp >= count) return;
  GroupMeta current{}, next{}, after_next{};
  load_group_head(args, warp, current);
  load_group_tail<K>(args, current);
  if (warp + warps < count) load_group_head(args, warp + warps, next);
  for (int64_t group = warp; group < count; group += warps) {
    if (group + 2 * warps < count) load_group_head(args, group + 2 * warps, after_next);
    if (group + warps < count) load_group_tail<K>(args, next);
    RowRef ref;
    ref.from = current.from;
    ref.to = current.to;
    // The step's parameters from the launch's (constant memory, no registers held across rows);
    // each row brings its own biases.
    ref.step = kernels::step_of_row<OptimizerKind::kSgd>(args, 0);
    ref.step.bias1 = 1 - current.beta1_power * args.beta1;
    ref.step.bias2 = 1 - current.beta2_power * args.beta2;
    ref.base = current.row < args.cached_rows ? args.cache : args.embedding;
    ref.weight_first =
        static_cast<size_t>(current.row) * static_cast<size_t>(args.embedding_stride);
    ref.state_first = static_cast<size_t>(current.row) * static_cast<size_t>(args.state_stride);
    ref.first_gradient = kernels::gradient_row(args, current.position);
    for (int64_t pass = 0; pass < args.columns; pass += kColumnsPerPass) {
      if constexpr (kVector) {
        update_pass_vector<K, kDecoupledDecay>(args, ref, pass, lane);
      } else {
        update_pass<K, T, kDecoupledDecay>(args, ref, pass, lane);
      }
    }
    if constexpr (K == OptimizerKind::kLazyAdam) {
      if (args.phase == kernels::OptimizerPhase::kUpdateAndAdvance) {
        __syncwarp();  // every lane's read of the row state is ordered before the write
        if (lane == 0) {
          args.row_state[2 * current.row] = current.beta1_power * args.beta1;
          args.row_state[2 * current.row + 1] = current.beta2_power * args.beta2;
        }
      }
    }
    current = next;
    next = after_next;
  }
}

using RowKernel = void (*)(OptimizerApplyArgs);

template <OptimizerKind K, DType T, bool kVector>
RowKernel row_kernel_with_decay(bool decoupled) {
  if constexpr (K == OptimizerKind::kLazyAdam) {
    if (decoupled) return &update_groups<K, T, true, kVector>;
  }
  return &update_groups<K, T, false, kVector>;
}

template <OptimizerKind K>
RowKernel row_kernel_of_type(DType type, bool decoupled, bool vector) {
  switch (type) {
    case DType::kHalf:
      return row_kernel_with_decay<K, DType::kHalf, false>(decoupled);
    case DType::kBf16:
      return row_kernel_with_decay<K, DType::kBf16, false>(decoupled);
    default:
      return vector ? row_kernel_with_decay<K, DType::kFloat, true>(decoupled)
                    : row_kernel_with_decay<K, DType::kFloat, false>(decoupled);
  }
}

RowKernel row_kernel(OptimizerKind kind, DType type, bool decoupled, bool vector) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return row_kernel_of_type<OptimizerKind::kSgd>(type, decoupled, vector);
    case OptimizerKind::kLazyAdam:
      return row_kernel_of_type<OptimizerKind::kLazyAdam>(type, decoupled, vector);
    case OptimizerKind::kRmsProp:
      return row_kernel_of_type<OptimizerKind::kRmsProp>(type, decoupled, vector);
    case OptimizerKind::kAdaGrad:
      return row_kernel_of_type<OptimizerKind::kAdaGrad>(type, decoupled, vector);
  }
  raise(Status::kInvalidInput,
        "unknown optimizer kind " + std::to_string(static_cast<int>(kind)) + " for the GPU apply");
}

// Whether the vector pass may serve: a float table, a width of whole 16-byte pieces, and every
// row of every array starting on a 16-byte boundary.
bool vector_pass_fits(const OptimizerApplyArgs& args) {
  auto aligned = [](const void* pointer) {
    return reinterpret_cast<uintptr_t>(pointer) % sizeof(float4) == 0;
  };
  return args.embedding_type == DType::kFloat && args.columns % 4 == 0 &&
         args.embedding_stride % 4 == 0 && args.state_stride % 4 == 0 &&
         args.grad_stride % 4 == 0 && args.local_grad_stride % 4 == 0 && aligned(args.embedding) &&
         aligned(args.cache) && aligned(args.state0) && aligned(args.state1) &&
         aligned(args.grads) && aligned(args.local_grads);
}

// Every instantiation, for loading (CUDA loads a kernel at its first launch, which waits for work
// already queued; see cuda_kernels.cu).
constexpr OptimizerKind kKinds[] = {OptimizerKind::kSgd, OptimizerKind::kLazyAdam,
                                    OptimizerKind::kRmsProp, OptimizerKind::kAdaGrad};
constexpr DType kTypes[] = {DType::kFloat, DType::kHalf, DType::kBf16};

// Blocks of `kernel` resident on all of `device`'s multiprocessors at once, asked once per kernel
// and device: the occupancy query costs microseconds of host time, paid on every apply otherwise.
int64_t wave_blocks(RowKernel kernel, int device) {
  static std::mutex mutex;
  static std::map<std::pair<RowKernel, int>, int64_t> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find({kernel, device});
  if (found != known.end()) return found->second;
  int multiprocessors = 0, resident = 0;
  check_cuda(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessors)");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int64_t blocks = int64_t{multiprocessors} * std::max(resident, 1);
  known.emplace(std::make_pair(kernel, device), blocks);
  return blocks;
}

}  // namespace

void launch_optimizer_rows(const kernels::OptimizerApplyArgs& args, cudaStream_t stream) {
  if (args.count <= 0) return;
  const RowKernel kernel =
      row_kernel(args.kind, args.embedding_type, args.adam_w != 0, vector_pass_fits(args));
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  // A warp per group, one wave of resident blocks at most; the grid-stride loop covers the rest.
  const int64_t warps_wanted = args.count;
  const int64_t blocks_wanted = (warps_wanted + kThreads / kLanes - 1) / (kThreads / kLanes);
  const auto blocks = static_cast<unsigned>(
      std::max<int64_t>(1, std::min(blocks_wanted, wave_blocks(kernel, device))));
  kernel<<<blocks, kThreads, 0, stream>>>(args);
  check_cuda(cudaGetLastError(), "optimizer apply launch");
}

void load_optimizer_rows() {
  for (const OptimizerKind kind : kKinds) {
    for (const DType type : kTypes) {
      for (const bool decoupled : {false, true}) {
        for (const bool vector : {false, true}) {
          cudaFuncAttributes attributes{};
          check_cuda(cudaFuncGetAttributes(&attributes, row_kernel(kind, type, decoupled, vector)),
                     "cudaFuncGetAttributes (optimizer apply)");
        }
      }
    }
  }
}

}  // namespace memloom::cuda
