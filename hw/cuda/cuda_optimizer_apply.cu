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
// A FLOAT table with 16-byte aligned rows (the common case) moves 4 neighbouring columns per load
// (update_pass_vector): a quarter of the memory instructions and address arithmetic.
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
constexpr unsigned kFullWarp = 0xffffffffu;
// Columns a lane holds at once (lane, lane + 32, ...): a pass covers 128 columns, one row of the
// common dimension 128, with every load of the warp 32 neighbouring elements.
constexpr int kColumnsPerLane = 4;
constexpr int64_t kColumnsPerPass = kLanes * kColumnsPerLane;

// Rows a warp updates at once: their loads are all issued before any of them is stored (a store
// may alias a later row's load, so the compiler would not move one row's loads above another's
// stores), so more bytes are in flight per warp: 4 KiB, and at ~122 registers a thread 16 warps a
// multiprocessor, 64 KiB, several times what hides the memory's latency at full bandwidth. Four
// rows took 188 registers (8 warps, the same bytes), and capping them at 128 spilled.
constexpr int kRowsInFlight = 2;

// What a warp's lanes need of one group (row) of a batch.
struct RowRef {
  char* base;           // the table or the cache
  size_t weight_first;  // elements
  size_t state_first;
  const float* first_gradient;
  int64_t from, to;  // positions of the row's gradients
  kernels::OptimizerStep step;
  bool valid;
};

// Lane g's group of the batch, shared by a shuffle (every lane takes part; `g` may be past the
// batch, which gives an invalid row).
__device__ RowRef share_row(const OptimizerApplyArgs& args, const kernels::OptimizerStep& params,
                            int g, int in_batch, int64_t my_row, int64_t my_from, int64_t my_to,
                            int64_t my_position, float my_bias1, float my_bias2) {
  const int source = g < in_batch ? g : 0;
  const int64_t row = __shfl_sync(kFullWarp, my_row, source);
  RowRef ref;
  ref.from = __shfl_sync(kFullWarp, my_from, source);
  ref.to = __shfl_sync(kFullWarp, my_to, source);
  const int64_t position = __shfl_sync(kFullWarp, my_position, source);
  ref.step = params;
  ref.step.bias1 = __shfl_sync(kFullWarp, my_bias1, source);
  ref.step.bias2 = __shfl_sync(kFullWarp, my_bias2, source);
  ref.valid = g < in_batch;
  ref.base = row < args.cached_rows ? args.cache : args.embedding;
  ref.weight_first = static_cast<size_t>(row) * static_cast<size_t>(args.embedding_stride);
  ref.state_first = static_cast<size_t>(row) * static_cast<size_t>(args.state_stride);
  ref.first_gradient = kernels::gradient_row(args, position);
  return ref;
}

// One pass of a lane over up to kRowsInFlight rows: load everything, sum each row's further
// gradient rows in position order, then step and store.
template <OptimizerKind K, DType T, bool kDecoupledDecay, int R>
__device__ void update_pass(const OptimizerApplyArgs& args, const RowRef (&refs)[R], int64_t pass,
                            unsigned lane) {
  float weight[R][kColumnsPerLane], first[R][kColumnsPerLane];
  float second[R][kColumnsPerLane], grad[R][kColumnsPerLane];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
      weight[r][j] = first[r][j] = second[r][j] = grad[r][j] = 0;
      if (!refs[r].valid || c >= args.columns) continue;
      const auto column = static_cast<size_t>(c);
      weight[r][j] = kernels::load_weight<T>(refs[r].base, refs[r].weight_first + column);
      if constexpr (kernels::uses_first_state(K)) {
        first[r][j] = args.state0[refs[r].state_first + column];
      }
      if constexpr (kernels::uses_second_state(K)) {
        second[r][j] = args.state1[refs[r].state_first + column];
      }
      // 0 + g1 + g2 ..., as the CPU kernel sums (0 + -0 is +0).
      grad[r][j] = 0.0F + refs[r].first_gradient[column];
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (!refs[r].valid) continue;
    for (int64_t k = refs[r].from + 1; k < refs[r].to; ++k) {
      const float* more = kernels::gradient_row(args, args.positions[k]);
#pragma unroll
      for (int j = 0; j < kColumnsPerLane; ++j) {
        const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
        if (c < args.columns) grad[r][j] += more[c];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int64_t c = pass + lane + static_cast<int64_t>(j) * kLanes;
      if (!refs[r].valid || c >= args.columns) continue;
      const auto column = static_cast<size_t>(c);
      kernels::step_element<K, kDecoupledDecay>(refs[r].step, grad[r][j], weight[r][j], first[r][j],
                                                second[r][j]);
      if constexpr (kernels::uses_first_state(K)) {
        args.state0[refs[r].state_first + column] = first[r][j];
      }
      if constexpr (kernels::uses_second_state(K)) {
        args.state1[refs[r].state_first + column] = second[r][j];
      }
      kernels::store_weight<T>(refs[r].base, refs[r].weight_first + column, weight[r][j]);
    }
  }
}

// The pass of a float table whose rows, states and gradients are 16-byte aligned and whose width
// is a multiple of 4: lane l holds columns [4l, 4l + 4) of the pass (128 columns), each array of
// a row one 16-byte load or store. The same sums and steps as update_pass, element by element.
template <OptimizerKind K, bool kDecoupledDecay, int R>
__device__ void update_pass_vector(const OptimizerApplyArgs& args, const RowRef (&refs)[R],
                                   int64_t pass, unsigned lane) {
  const int64_t c = pass + 4 * static_cast<int64_t>(lane);
  const bool inside = c < args.columns;  // all four columns or none
  const auto column = static_cast<size_t>(c);
  float4 weight[R], first[R], second[R], grad[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    weight[r] = first[r] = second[r] = grad[r] = make_float4(0, 0, 0, 0);
    if (!refs[r].valid || !inside) continue;
    weight[r] = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(refs[r].base) +
                                                 refs[r].weight_first + column);
    if constexpr (kernels::uses_first_state(K)) {
      first[r] = *reinterpret_cast<const float4*>(args.state0 + refs[r].state_first + column);
    }
    if constexpr (kernels::uses_second_state(K)) {
      second[r] = *reinterpret_cast<const float4*>(args.state1 + refs[r].state_first + column);
    }
    const float4 g = *reinterpret_cast<const float4*>(refs[r].first_gradient + column);
    // 0 + g1 + g2 ..., as the CPU kernel sums (0 + -0 is +0).
    grad[r] = make_float4(0.0F + g.x, 0.0F + g.y, 0.0F + g.z, 0.0F + g.w);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (!refs[r].valid || !inside) continue;
    for (int64_t k = refs[r].from + 1; k < refs[r].to; ++k) {
      const float4 g =
          *reinterpret_cast<const float4*>(kernels::gradient_row(args, args.positions[k]) + column);
      grad[r].x += g.x;
      grad[r].y += g.y;
      grad[r].z += g.z;
      grad[r].w += g.w;
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (!refs[r].valid || !inside) continue;
    const kernels::OptimizerStep& step = refs[r].step;
    kernels::step_element<K, kDecoupledDecay>(step, grad[r].x, weight[r].x, first[r].x,
                                              second[r].x);
    kernels::step_element<K, kDecoupledDecay>(step, grad[r].y, weight[r].y, first[r].y,
                                              second[r].y);
    kernels::step_element<K, kDecoupledDecay>(step, grad[r].z, weight[r].z, first[r].z,
                                              second[r].z);
    kernels::step_element<K, kDecoupledDecay>(step, grad[r].w, weight[r].w, first[r].w,
                                              second[r].w);
    if constexpr (kernels::uses_first_state(K)) {
      *reinterpret_cast<float4*>(args.state0 + refs[r].state_first + column) = first[r];
    }
    if constexpr (kernels::uses_second_state(K)) {
      *reinterpret_cast<float4*>(args.state1 + refs[r].state_first + column) = second[r];
    }
    *reinterpret_cast<float4*>(reinterpret_cast<float*>(refs[r].base) + refs[r].weight_first +
                               column) = weight[r];
  }
}

// Warps take batches of 32 groups, grid-stride; lane i reads group i's row, range, first position
// and bias once for the batch.
template <OptimizerKind K, DType T, bool kDecoupledDecay, bool kVector>
__global__ void __launch_bounds__(kThreads) update_rows(OptimizerApplyArgs args) {
  constexpr int R = kRowsInFlight;
  const unsigned lane = threadIdx.x % kLanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  // The step's parameters (no row state is read for SGD); each row brings its own biases.
  const kernels::OptimizerStep params = kernels::step_of_row<OptimizerKind::kSgd>(args, 0);
  // The grouping's count, read on the device: the host launched over an upper bound rather than
  // wait to read it back.
  const int64_t count = kernels::live_groups(args);
  for (int64_t batch = warp * kLanes; batch < count; batch += warps * kLanes) {
    const int64_t mine = batch + lane;
    int64_t my_row = 0, my_from = 0, my_to = 0, my_position = 0;
    float my_bias1 = 1, my_bias2 = 1;
    if (mine < count) {
      my_row = args.rows[mine];
      my_from = args.first[mine];
      my_to = args.first[mine + 1];
      my_position = args.positions[my_from];  // a group has at least one request
      const kernels::OptimizerStep own = kernels::step_of_row<K>(args, my_row);
      my_bias1 = own.bias1;
      my_bias2 = own.bias2;
      if constexpr (K == OptimizerKind::kLazyAdam) {
        // This lane alone reads the row's state in this launch (each row is one group), and
        // has read it: it advances it now, as the separate kAdvanceRowState launch would.
        if (args.phase == kernels::OptimizerPhase::kUpdateAndAdvance) {
          args.row_state[2 * my_row] *= args.beta1;
          args.row_state[2 * my_row + 1] *= args.beta2;
        }
      }
    }
    const int64_t left = count - batch;
    const int in_batch = left < kLanes ? static_cast<int>(left) : kLanes;
    for (int g = 0; g < in_batch; g += R) {
      RowRef refs[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        refs[r] = share_row(args, params, g + r, in_batch, my_row, my_from, my_to, my_position,
                            my_bias1, my_bias2);
      }
      for (int64_t pass = 0; pass < args.columns; pass += kColumnsPerPass) {
        if constexpr (kVector) {
          update_pass_vector<K, kDecoupledDecay, R>(args, refs, pass, lane);
        } else {
          update_pass<K, T, kDecoupledDecay, R>(args, refs, pass, lane);
        }
      }
    }
  }
}

using RowKernel = void (*)(OptimizerApplyArgs);

template <OptimizerKind K, DType T, bool kVector>
RowKernel row_kernel_with_decay(bool decoupled) {
  if constexpr (K == OptimizerKind::kLazyAdam) {
    if (decoupled) return &update_rows<K, T, true, kVector>;
  }
  return &update_rows<K, T, false, kVector>;
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
  // One wave of resident blocks at most; the batches' grid-stride loop covers the rest.
  const int64_t warps_wanted = (args.count + kLanes - 1) / kLanes;
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
