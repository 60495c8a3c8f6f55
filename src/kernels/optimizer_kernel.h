// The sparse optimizer kernel (hw/hal/kernels.h: KernelId::kOptimizerApply): one step of SGD,
// lazy Adam, RMSProp or AdaGrad on the rows of a rank's own partition that a batch touched.
//
// The host has grouped the gradients by row (each distinct row once, `first` and `positions`
// listing its gradient rows in a fixed order), so a row's gradient is the sum of its gradient rows
// in that order: deterministic, and the same on every backend. The update formulas are
// WholeMemory's (weight decay added to the gradient, or with adam_w subtracted from the weight;
// Adam's bias correction from the row's running beta1^t, beta2^t). The table may be FLOAT, HALF
// or BF16: values are computed in float and rounded once when stored; states are FLOAT.
//
// A work item is (row u, columns [part * columns_per_item, ...)): a GPU takes one column per
// item so that neighbouring threads touch neighbouring words, a CPU thread whole rows. Every
// column of every dimension is covered (no multiple of 4 or 32 assumed). Lazy Adam's per-row
// state (beta12t) is advanced by a second launch (phase kAdvanceRowState, one item per row) after
// the element update has read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/kernels/element_types.h"
#include "src/kernels/host_device.h"

namespace memloom::kernels {

enum class OptimizerKind : int32_t { kSgd = 1, kLazyAdam = 2, kRmsProp = 3, kAdaGrad = 4 };
enum class OptimizerPhase : int32_t { kUpdateElements = 0, kAdvanceRowState = 1 };

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
};

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
  // Never negative here: saying so drops the errno branch, which kept the loop scalar.
  if (value < 0) __builtin_unreachable();
  return __builtin_sqrtf(value);
#endif
}

// One optimizer step of columns [begin, begin + count) of a row with gradients grad[0, count):
// the optimizer and the table's type are template parameters, so that a CPU's loop over a row
// has no branch left inside and vectorises.
template <OptimizerKind K, DType T>
MEMLOOM_HOST_DEVICE inline void update_columns(const OptimizerApplyArgs& args, int64_t row,
                                               int64_t begin, int64_t count, const float* grads) {
  char* base = row < args.cached_rows ? args.cache : args.embedding;
  const auto weight_first =
      static_cast<size_t>(row) * static_cast<size_t>(args.embedding_stride) + begin;
  const auto state_first =
      static_cast<size_t>(row) * static_cast<size_t>(args.state_stride) + begin;
  float beta1t = 0, beta2t = 0;
  if constexpr (K == OptimizerKind::kLazyAdam) {
    beta1t = args.row_state[2 * row] * args.beta1;
    beta2t = args.row_state[2 * row + 1] * args.beta2;
  }
  for (int64_t c = 0; c < count; ++c) {
    const size_t weight_at = weight_first + c, state_at = state_first + c;
    float weight = load_weight<T>(base, weight_at);
    float grad = grads[c];
    if constexpr (K == OptimizerKind::kSgd) {
      grad += args.weight_decay * weight;
      weight -= args.lr * grad;
    } else if constexpr (K == OptimizerKind::kLazyAdam) {
      if (args.adam_w) {
        weight -= args.lr * args.weight_decay * weight;
      } else {
        grad += args.weight_decay * weight;
      }
      const float m = args.beta1 * args.state0[state_at] + (1 - args.beta1) * grad;
      const float v = args.beta2 * args.state1[state_at] + (1 - args.beta2) * grad * grad;
      args.state0[state_at] = m;
      args.state1[state_at] = v;
      const float m_hat = m / (1 - beta1t);
      const float v_hat = v / (1 - beta2t);
      weight -= args.lr * m_hat / (square_root(v_hat) + args.epsilon);
    } else if constexpr (K == OptimizerKind::kRmsProp) {
      grad += args.weight_decay * weight;
      const float v = args.alpha * args.state0[state_at] + (1 - args.alpha) * grad * grad;
      args.state0[state_at] = v;
      weight -= args.lr * grad / (square_root(v) + args.epsilon);
    } else {
      grad += args.weight_decay * weight;
      const float sum = args.state0[state_at] + grad * grad;
      args.state0[state_at] = sum;
      weight -= args.lr * grad / (square_root(sum) + args.epsilon);
    }
    store_weight<T>(base, weight_at, weight);
  }
}

template <OptimizerKind K>
MEMLOOM_HOST_DEVICE inline void update_columns_of(const OptimizerApplyArgs& args, int64_t row,
                                                  int64_t begin, int64_t count,
                                                  const float* grads) {
  switch (args.embedding_type) {
    case DType::kHalf:
      update_columns<K, DType::kHalf>(args, row, begin, count, grads);
      break;
    case DType::kBf16:
      update_columns<K, DType::kBf16>(args, row, begin, count, grads);
      break;
    default:
      update_columns<K, DType::kFloat>(args, row, begin, count, grads);
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

// Columns a CPU thread sums and updates at once (a stack buffer of summed gradients).
constexpr int64_t kOptimizerSpan = 64;

struct OptimizerApplyKernel {
  using Args = OptimizerApplyArgs;

  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    if (args.phase == OptimizerPhase::kAdvanceRowState) {
      const int64_t row = args.rows[item];
      args.row_state[2 * row] *= args.beta1;
      args.row_state[2 * row + 1] *= args.beta2;
      return;
    }
    const auto per_row = static_cast<size_t>(args.items_per_row);
    const auto u = static_cast<int64_t>(item / per_row);
    const int64_t begin = static_cast<int64_t>(item % per_row) * args.columns_per_item;
    const int64_t end =
        begin + args.columns_per_item < args.columns ? begin + args.columns_per_item : args.columns;
    const int64_t row = args.rows[u];
    const int64_t from = args.first[u], to = args.first[u + 1];
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
  }
};

}  // namespace memloom::kernels
