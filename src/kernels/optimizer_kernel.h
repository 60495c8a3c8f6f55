// The sparse optimizer kernel (hw/hal/kernels.h: KernelId::kOptimizerApply): one step of SGD,
// lazy Adam, RMSProp or AdaGrad on the rows of a rank's own partition that a batch touched.
//
// The requests have been grouped by row (row_grouping_kernel.h: each distinct row once, in
// ascending order, `first` and `positions` listing its gradient rows in a fixed order), so a row's
// gradient is the sum of its gradient rows in that order: deterministic, and the same on every
// backend. The update formulas are WholeMemory's (weight decay added to the gradient, or with
// adam_w subtracted from the weight; Adam's bias correction from the row's running beta1^t,
// beta2^t). The table may be FLOAT, HALF or BF16: values are computed in float and rounded once
// when stored; states are FLOAT.
//
// A work item is (row u, columns [part * columns_per_item, ...)). Every column of every dimension
// is covered (no multiple of 4 or 32 assumed). Lazy Adam's per-row state (beta12t) is advanced
// after the element update has read it: by a second launch (phase kAdvanceRowState, one item per
// row), or in the same launch (phase kUpdateAndAdvance) when each item is a whole row
// (items_per_row 1), as the gradient apply launches it. The CUDA backend runs the update phases
// as a warp per row (hw/cuda/cuda_optimizer_apply.cu), which reads neither columns_per_item nor
// items_per_row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/kernels/element_types.h"
#include "src/kernels/host_device.h"

namespace memloom::kernels {

enum class OptimizerKind : int32_t { kSgd = 1, kLazyAdam = 2, kRmsProp = 3, kAdaGrad = 4 };
enum class OptimizerPhase : int32_t {
  kUpdateElements = 0,
  kAdvanceRowState = 1,
  kUpdateAndAdvance = 2,  // whole rows per item: one launch instead of two (see above)
};

struct OptimizerApplyArgs {
  OptimizerKind kind;
  OptimizerPhase phase;
  int32_t adam_w;  // lazy Adam: decoupled weight decay
  float lr, weight_decay, epsilon, beta1, beta2, alpha;
  char* embedding;           // element (local row r, c) at embedding + (r * stride + c) * size
  DType embedding_type;      // kFloat, kHalf or kBf16
  int64_t embedding_stride;  // elements
  char* cache;               // local rows below cached_rows live here instead (same layout)
  int64_t cached_rows;
  float* state0;  // m (Adam), v (RMSProp), state_sum (AdaGrad); stride state_stride
  float* state1;  // v (Adam)
  int64_t state_stride;
  float* row_state;      // Adam: beta1^t, beta2^t per local row (stride 2)
  const int64_t* rows;   // `count` distinct local rows
  const int64_t* first;  // count + 1: row u's gradients are positions[first[u] .. first[u+1])
  // Gradient rows: p >= 0 is row p of `grads` (rows received from other ranks), p < 0 row -1 - p
  // of `local_grads` (this rank's own list, read where the caller put it).
  const int64_t* positions;
  const float* grads;
  int64_t grad_stride;
  const float* local_grads;
  int64_t local_grad_stride;
  int64_t count;
  int64_t columns;
  int64_t columns_per_item;
  int64_t items_per_row;
  // Set where the grouping left its results on the device (a one-rank apply, which then needs no
  // read-back before this launch): the number of groups is *group_count (`count` is only an upper
  // bound, and the launch's items cover it), and nothing is updated unless *first_bad is ~0 (no
  // index past the table). Null: `count` groups.
  const unsigned long long* group_count;
  const unsigned long long* first_bad;
};

// The groups a launch updates (see OptimizerApplyArgs::group_count).
MEMLOOM_HOST_DEVICE inline int64_t live_groups(const OptimizerApplyArgs& args) {
  if (args.first_bad != nullptr && *args.first_bad != ~0ULL) return 0;
  if (args.group_count == nullptr) return args.count;
  const auto groups = static_cast<int64_t>(*args.group_count);
  return groups < args.count ? groups : args.count;
}

template <DType T>
MEMLOOM_HOST_DEVICE inline float load_weight(const char* base, size_t element) {
  if constexpr (T == DType::kHalf) {
    return half_to_float(reinterpret_cast<const uint16_t*>(base)[element]);
  } else if constexpr (T == DType::kBf16) {
    return bf16_to_float(reinterpret_cast<const uint16_t*>(base)[element]);
  } else {
    return reinterpret_cast<const float*>(base)[element];
  }
}

template <DType T>
MEMLOOM_HOST_DEVICE inline void store_weight(char* base, size_t element, float value) {
  if constexpr (T == DType::kHalf) {
    reinterpret_cast<uint16_t*>(base)[element] = float_to_half(value);
  } else if constexpr (T == DType::kBf16) {
    reinterpret_cast<uint16_t*>(base)[element] = float_to_bf16(value);
  } else {
    reinterpret_cast<float*>(base)[element] = value;
  }
}

MEMLOOM_HOST_DEVICE inline float square_root(float value) {
#if defined(__CUDA_ARCH__)
  return sqrtf(value);
#else
  // The CPU kernels are compiled with -fno-math-errno (hw/CMakeLists.txt), so this is one
  // instruction with no errno branch, and the loops around it vectorise.
  return __builtin_sqrtf(value);
#endif
}

#if defined(__CUDACC__)
#define MEMLOOM_RESTRICT __restrict__
#else
#define MEMLOOM_RESTRICT __restrict
#endif

// Which per-element states an optimizer keeps (OptimizerApplyArgs::state0 / state1).
MEMLOOM_HOST_DEVICE constexpr bool uses_first_state(OptimizerKind kind) {
  return kind != OptimizerKind::kSgd;
}
MEMLOOM_HOST_DEVICE constexpr bool uses_second_state(OptimizerKind kind) {
  return kind == OptimizerKind::kLazyAdam;
}

// The parameters of one step, read out of the arguments once (see update_columns).
struct OptimizerStep {
  float lr, weight_decay, epsilon, beta1, beta2, alpha;
  float bias1, bias2;  // lazy Adam: 1 - beta^t after this step
};

// One element's step: the one place the update formulas are written, for the CPU's row loop and
// the GPU's warp-per-row kernel (hw/cuda/cuda_optimizer_apply.cu) alike. `first` is m (Adam), v
// (RMSProp) or the state sum (AdaGrad); `second` is Adam's v.
template <OptimizerKind K, bool kDecoupledDecay>
MEMLOOM_HOST_DEVICE inline void step_element(const OptimizerStep& step, float grad, float& weight,
                                             float& first, float& second) {
  if constexpr (K == OptimizerKind::kSgd) {
    grad += step.weight_decay * weight;
    weight -= step.lr * grad;
  } else if constexpr (K == OptimizerKind::kLazyAdam) {
    if constexpr (kDecoupledDecay) {
      weight -= step.lr * step.weight_decay * weight;
    } else {
      grad += step.weight_decay * weight;
    }
    const float m = step.beta1 * first + (1 - step.beta1) * grad;
    const float v = step.beta2 * second + (1 - step.beta2) * grad * grad;
    first = m;
    second = v;
    const float m_hat = m / step.bias1;
    const float v_hat = v / step.bias2;
    weight -= step.lr * m_hat / (square_root(v_hat) + step.epsilon);
  } else if constexpr (K == OptimizerKind::kRmsProp) {
    grad += step.weight_decay * weight;
    const float v = step.alpha * first + (1 - step.alpha) * grad * grad;
    first = v;
    weight -= step.lr * grad / (square_root(v) + step.epsilon);
  } else {
    grad += step.weight_decay * weight;
    const float sum = first + grad * grad;
    first = sum;
    weight -= step.lr * grad / (square_root(sum) + step.epsilon);
  }
}

// The step of local row `row`: the parameters, and lazy Adam's bias corrections from the row's
// running beta1^t, beta2^t (read before this step advances them).
template <OptimizerKind K>
MEMLOOM_HOST_DEVICE inline OptimizerStep step_of_row(const OptimizerApplyArgs& args, int64_t row) {
  OptimizerStep step{
      args.lr, args.weight_decay, args.epsilon, args.beta1, args.beta2, args.alpha, 1, 1};
  if constexpr (K == OptimizerKind::kLazyAdam) {
    step.bias1 = 1 - args.row_state[2 * row] * args.beta1;
    step.bias2 = 1 - args.row_state[2 * row + 1] * args.beta2;
  }
  return step;
}

// One optimizer step of columns [begin, begin + count) of a row with gradients grad[0, count):
// the optimizer and the table's type are template parameters, so that a CPU's loop over a row
// has no branch left inside (nor has lazy Adam's choice of weight decay, kDecoupledDecay: adam_w).
// The parameters are read into a local step and the row's arrays are restrict pointers: through
// `args` the compiler must assume a store to a state may change lr or beta1 (they are floats too)
// and reloads them every column, which kept the loop scalar (the emulated apply ran at 0.16x
// memcpy).
template <OptimizerKind K, DType T, bool kDecoupledDecay>
MEMLOOM_HOST_DEVICE inline void update_columns(const OptimizerApplyArgs& args, int64_t row,
                                               int64_t begin, int64_t count, const float* grads) {
  char* base = row < args.cached_rows ? args.cache : args.embedding;
  const auto weight_first =
      static_cast<size_t>(row) * static_cast<size_t>(args.embedding_stride) + begin;
  const auto state_first =
      static_cast<size_t>(row) * static_cast<size_t>(args.state_stride) + begin;
  const OptimizerStep step = step_of_row<K>(args, row);
  float* MEMLOOM_RESTRICT state0 = args.state0 != nullptr ? args.state0 + state_first : nullptr;
  float* MEMLOOM_RESTRICT state1 = args.state1 != nullptr ? args.state1 + state_first : nullptr;
  const float* MEMLOOM_RESTRICT gradient = grads;
  for (int64_t c = 0; c < count; ++c) {
    const size_t weight_at = weight_first + static_cast<size_t>(c);
    float weight = load_weight<T>(base, weight_at);
    float first_state = 0, second_state = 0;
    if constexpr (uses_first_state(K)) first_state = state0[c];
    if constexpr (uses_second_state(K)) second_state = state1[c];
    step_element<K, kDecoupledDecay>(step, gradient[c], weight, first_state, second_state);
    if constexpr (uses_first_state(K)) state0[c] = first_state;
    if constexpr (uses_second_state(K)) state1[c] = second_state;
    store_weight<T>(base, weight_at, weight);
  }
}

template <OptimizerKind K, DType T>
MEMLOOM_HOST_DEVICE inline void update_columns_with_decay(const OptimizerApplyArgs& args,
                                                          int64_t row, int64_t begin, int64_t count,
                                                          const float* grads) {
  if (K == OptimizerKind::kLazyAdam && args.adam_w != 0) {
    update_columns<K, T, true>(args, row, begin, count, grads);
  } else {
    update_columns<K, T, false>(args, row, begin, count, grads);
  }
}

template <OptimizerKind K>
MEMLOOM_HOST_DEVICE inline void update_columns_of(const OptimizerApplyArgs& args, int64_t row,
                                                  int64_t begin, int64_t count,
                                                  const float* grads) {
  switch (args.embedding_type) {
    case DType::kHalf:
      update_columns_with_decay<K, DType::kHalf>(args, row, begin, count, grads);
      break;
    case DType::kBf16:
      update_columns_with_decay<K, DType::kBf16>(args, row, begin, count, grads);
      break;
    default:
      update_columns_with_decay<K, DType::kFloat>(args, row, begin, count, grads);
  }
}

MEMLOOM_HOST_DEVICE inline void update_columns_any(const OptimizerApplyArgs& args, int64_t row,
                                                   int64_t begin, int64_t count,
                                                   const float* grads) {
  switch (args.kind) {
    case OptimizerKind::kSgd:
      update_columns_of<OptimizerKind::kSgd>(args, row, begin, count, grads);
      break;
    case OptimizerKind::kLazyAdam:
      update_columns_of<OptimizerKind::kLazyAdam>(args, row, begin, count, grads);
      break;
    case OptimizerKind::kRmsProp:
      update_columns_of<OptimizerKind::kRmsProp>(args, row, begin, count, grads);
      break;
    default:
      update_columns_of<OptimizerKind::kAdaGrad>(args, row, begin, count, grads);
  }
}

// The gradient row at position p (see OptimizerApplyArgs::positions).
MEMLOOM_HOST_DEVICE inline const float* gradient_row(const OptimizerApplyArgs& args, int64_t p) {
  return p >= 0 ? args.grads + static_cast<size_t>(p) * static_cast<size_t>(args.grad_stride)
                : args.local_grads +
                      static_cast<size_t>(-1 - p) * static_cast<size_t>(args.local_grad_stride);
}

#if !defined(__CUDA_ARCH__)
// How many rows ahead a CPU thread prefetches (see OptimizerApplyKernel::body).
constexpr int64_t kPrefetchRows = 1;
inline void prefetch_row(const OptimizerApplyArgs& args, int64_t row) {
  constexpr size_t kLine = 64;
  const size_t element = element_size(args.embedding_type);
  const char* weights =
      (row < args.cached_rows ? args.cache : args.embedding) +
      static_cast<size_t>(row) * static_cast<size_t>(args.embedding_stride) * element;
  const size_t weight_bytes = static_cast<size_t>(args.columns) * element;
  for (size_t at = 0; at < weight_bytes; at += kLine) __builtin_prefetch(weights + at, 1);
  const size_t state_bytes = static_cast<size_t>(args.columns) * sizeof(float);
  const size_t state_at = static_cast<size_t>(row) * static_cast<size_t>(args.state_stride);
  for (const float* state : {args.state0, args.state1}) {
    if (state == nullptr) continue;
    const auto* bytes = reinterpret_cast<const char*>(state + state_at);
    for (size_t at = 0; at < state_bytes; at += kLine) __builtin_prefetch(bytes + at, 1);
  }
}
#endif

// Columns a CPU thread sums and updates at once (a stack buffer of summed gradients).
constexpr int64_t kOptimizerSpan = 64;

struct OptimizerApplyKernel {
  using Args = OptimizerApplyArgs;

  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    if (args.phase == OptimizerPhase::kAdvanceRowState) {
      if (static_cast<int64_t>(item) >= live_groups(args)) return;
      const int64_t row = args.rows[item];
      args.row_state[2 * row] *= args.beta1;
      args.row_state[2 * row + 1] *= args.beta2;
      return;
    }
    const auto per_row = static_cast<size_t>(args.items_per_row);
    // A GPU divides 64-bit integers in software (tens of instructions per item, one item per
    // column); 32 bits suffice below 2^32 items, which any batch but a huge one is.
    size_t row_index = 0, part = 0;
    if (item <= 0xffffffffu && per_row <= 0xffffffffu) {
      const auto narrow_item = static_cast<uint32_t>(item);
      const auto narrow_per_row = static_cast<uint32_t>(per_row);
      row_index = narrow_item / narrow_per_row;
      part = narrow_item % narrow_per_row;
    } else {
      row_index = item / per_row;
      part = item % per_row;
    }
    const auto u = static_cast<int64_t>(row_index);
    const int64_t live = live_groups(args);
    if (u >= live) return;
    const int64_t begin = static_cast<int64_t>(part) * args.columns_per_item;
    const int64_t end =
        begin + args.columns_per_item < args.columns ? begin + args.columns_per_item : args.columns;
    const int64_t row = args.rows[u];
    const int64_t from = args.first[u], to = args.first[u + 1];
#if !defined(__CUDA_ARCH__)
    // Rows come in ascending order but with gaps (only the batch's rows), which the hardware
    // prefetcher follows poorly; a CPU thread walks items in order, so it asks for the next row's
    // weights and states now and their memory latency overlaps this row's arithmetic.
    if (begin == 0 && u + kPrefetchRows < live) prefetch_row(args, args.rows[u + kPrefetchRows]);
#endif
    // Each column's gradient is summed in position order (0 + g1 + g2 ...), whatever the span.
    for (int64_t span = begin; span < end; span += kOptimizerSpan) {
      const int64_t count = end - span < kOptimizerSpan ? end - span : kOptimizerSpan;
      float grads[kOptimizerSpan];
      for (int64_t c = 0; c < count; ++c) grads[c] = 0;
      for (int64_t k = from; k < to; ++k) {
        const float* source = gradient_row(args, args.positions[k]) + span;
        for (int64_t c = 0; c < count; ++c) grads[c] += source[c];
      }
      update_columns_any(args, row, span, count, grads);
    }
    // Every span of the row has read its biases: the row's state may advance now.
    if (args.phase == OptimizerPhase::kUpdateAndAdvance && args.kind == OptimizerKind::kLazyAdam) {
      args.row_state[2 * row] *= args.beta1;
      args.row_state[2 * row + 1] *= args.beta2;
    }
  }
};

}  // namespace memloom::kernels
