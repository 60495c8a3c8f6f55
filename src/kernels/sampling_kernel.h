// The neighbour sampling kernels (hw/hal/kernels.h: KernelId::kSampleCount, kSampleNeighbours):
// sampling without replacement from a CSR graph, one centre node per work item.
//
//   count:  counts[i] = min(max_samples, degree of centre i) (the degree when max_samples <= 0);
//           a centre outside the graph records 1 + its value in bad_center and counts 0;
//   sample: with offsets[i] = the exclusive sum of the counts, writes centre i's samples at
//           [offsets[i], offsets[i + 1]): the neighbours, optionally each sample's centre position
//           and edge id.
//
// Random numbers are counter_random(seed, centre node id, position): the same centre draws the
// same numbers in any batch, on any rank and on either backend.
//   unweighted: Floyd's algorithm (Bentley and Floyd, CACM 1987) picks k distinct edge positions
//               out of d with k draws, checking each against the ones already picked (k^2 / 2
//               comparisons; the picks in a local array up to kLocalPicks, else in scratch);
//   weighted:   Efraimidis and Spirakis' A-ES (IPL 2006): edge j gets the key log(u_j) / w_j and
//               the k largest keys win, which draws k edges without replacement with probability
//               proportional to the weights; the best k keys are kept sorted in scratch memory.
// A centre whose degree is at most k takes all of its edges in CSR order.
//
// The graph's arrays are kernels::RowTable columns (one element per row), so CHUNKED WholeMemory
// tensors are read through their chunk table and contiguous ones directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/kernels/atomics.h"
#include "src/kernels/counter_random.h"
#include "src/kernels/row_copy_kernel.h"

namespace memloom::kernels {

struct SampleArgs {
  RowTable row_ptr;  // kInt or kInt64, node_count + 1 elements
  RowTable col;      // kInt or kInt64
  RowTable weight;   // kFloat or kDouble; base and chunks null when unweighted
  bool weighted;
  const void* centers;
  DType center_type;  // kInt or kInt64
  int64_t center_count;
  int64_t node_count;
  int32_t max_samples;
  uint64_t seed;
  int32_t* counts;                 // count: center_count
  unsigned long long* bad_center;  // count: 0 before the launch
  const int32_t* offsets;          // sample: center_count + 1
  void* out_nodes;                 // sample: the column type
  int32_t* out_center;             // sample: may be null
  int64_t* out_edge;               // sample: may be null
  int64_t* picked;  // sample: scratch, one per sample (edge positions); only needs_pick_scratch()
  double* keys;     // sample, weighted: scratch, one per sample
};

MEMLOOM_HOST_DEVICE inline int64_t load_integer(const RowTable& table, int64_t element) {
  const size_t size = element_size(table.dtype);
  const char* at = byte_address(table, static_cast<size_t>(element + table.offset) * size);
  if (table.dtype == DType::kInt) return *reinterpret_cast<const int32_t*>(at);
  return *reinterpret_cast<const int64_t*>(at);
}

MEMLOOM_HOST_DEVICE inline double load_real(const RowTable& table, int64_t element) {
  const size_t size = element_size(table.dtype);
  const char* at = byte_address(table, static_cast<size_t>(element + table.offset) * size);
  if (table.dtype == DType::kFloat) return *reinterpret_cast<const float*>(at);
  return *reinterpret_cast<const double*>(at);
}

MEMLOOM_HOST_DEVICE inline int64_t center_at(const SampleArgs& args, int64_t i) {
  if (args.center_type == DType::kInt) return static_cast<const int32_t*>(args.centers)[i];
  return static_cast<const int64_t*>(args.centers)[i];
}

MEMLOOM_HOST_DEVICE inline double natural_log(double value) {
#if defined(__CUDA_ARCH__)
  return log(value);
#else
  return __builtin_log(value);
#endif
}

// Unweighted draws of at most this many samples a centre keep their picks in a local array (the
// CUDA backend's warp kernel in registers, a lane each) rather than in the scratch `picked`.
constexpr int32_t kLocalPicks = 32;

// Whether a launch needs SampleArgs::picked: weighted draws keep their best keys there, and
// unweighted ones above kLocalPicks their picks (max_samples <= 0 takes every edge: no picks).
MEMLOOM_HOST_DEVICE inline bool needs_pick_scratch(bool weighted, int32_t max_samples) {
  return weighted || max_samples > kLocalPicks;
}

// One sample at output position `at`: the node, and where asked the centre's position in the
// call and the edge id (the per-centre kernel here and the CUDA warp kernel, cuda_sampling.cu).
MEMLOOM_HOST_DEVICE inline void write_sample(const SampleArgs& args, int64_t at, int64_t node,
                                             int64_t edge, int64_t center_position) {
  if (args.col.dtype == DType::kInt) {
    static_cast<int32_t*>(args.out_nodes)[at] = static_cast<int32_t>(node);
  } else {
    static_cast<int64_t*>(args.out_nodes)[at] = node;
  }
  if (args.out_center != nullptr) args.out_center[at] = static_cast<int32_t>(center_position);
  if (args.out_edge != nullptr) args.out_edge[at] = edge;
}

// Launched with center_count + 1 items: the last writes counts[center_count] = 0.
struct SampleCountKernel {
  using Args = SampleArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto i = static_cast<int64_t>(item);
    if (i == args.center_count) {  // the closing 0 that the scan's inclusive end reads
      args.counts[i] = 0;
      return;
    }
    const int64_t center = center_at(args, i);
    if (center < 0 || center >= args.node_count) {
      atomic_max(args.bad_center, static_cast<unsigned long long>(center < 0 ? 0 : center) + 1);
      args.counts[i] = 0;
      return;
    }
    const int64_t degree =
        load_integer(args.row_ptr, center + 1) - load_integer(args.row_ptr, center);
    const bool all = args.max_samples <= 0 || degree <= args.max_samples;
    args.counts[i] = static_cast<int32_t>(all ? degree : args.max_samples);
  }
};

struct SampleNeighboursKernel {
  using Args = SampleArgs;

  // Floyd: for j = d - k .. d - 1, draw t in [0, j]; take t unless taken already, else j.
  MEMLOOM_HOST_DEVICE static void pick_uniform(const Args& args, int64_t center, int64_t degree,
                                               int64_t k, int64_t* picked) {
    int64_t taken = 0;
    for (int64_t j = degree - k; j < degree; ++j) {
      const uint64_t bits =
          counter_random(args.seed, static_cast<uint64_t>(center), static_cast<uint64_t>(j));
      int64_t choice = static_cast<int64_t>(bits % static_cast<uint64_t>(j + 1));
      for (int64_t q = 0; q < taken; ++q) {
        if (picked[q] == choice) {
          choice = j;
          break;
        }
      }
      picked[taken++] = choice;
    }
  }

  // A-ES: keep the k largest keys log(u) / w in descending order (insertion).
  MEMLOOM_HOST_DEVICE static void pick_weighted(const Args& args, int64_t center, int64_t start,
                                                int64_t degree, int64_t k, int64_t* picked,
                                                double* keys) {
    int64_t kept = 0;
    for (int64_t j = 0; j < degree; ++j) {
      const double weight = load_real(args.weight, start + j);
      const uint64_t bits =
          counter_random(args.seed, static_cast<uint64_t>(center), static_cast<uint64_t>(j));
      // A weight of zero (or less) is never preferred over a positive one.
      const double key = weight > 0 ? natural_log(uniform_open_closed(bits)) / weight : -1e300;
      if (kept == k && key <= keys[k - 1]) continue;
      int64_t at = kept < k ? kept++ : k - 1;
      while (at > 0 && keys[at - 1] < key) {
        keys[at] = keys[at - 1];
        picked[at] = picked[at - 1];
        --at;
      }
      keys[at] = key;
      picked[at] = j;
    }
  }

  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto i = static_cast<int64_t>(item);
    const int64_t out = args.offsets[i];
    const int64_t k = args.offsets[i + 1] - out;
    if (k == 0) return;
    const int64_t center = center_at(args, i);
    const int64_t start = load_integer(args.row_ptr, center);
    const int64_t degree = load_integer(args.row_ptr, center + 1) - start;
    if (k == degree) {
      write_samples(args, i, out, start, k, nullptr);
      return;
    }
    if (!args.weighted && k <= kLocalPicks) {
      int64_t picked[kLocalPicks];
      pick_uniform(args, center, degree, k, picked);
      write_samples(args, i, out, start, k, picked);
      return;
    }
    int64_t* picked = args.picked + out;
    if (args.weighted) {
      pick_weighted(args, center, start, degree, k, picked, args.keys + out);
    } else {
      pick_uniform(args, center, degree, k, picked);
    }
    write_samples(args, i, out, start, k, picked);
  }

  // Centre i's k samples at `out`: edges start + picked[j], or start + j when picked is null.
  MEMLOOM_HOST_DEVICE static void write_samples(const Args& args, int64_t i, int64_t out,
                                                int64_t start, int64_t k, const int64_t* picked) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t edge = start + (picked != nullptr ? picked[j] : j);
      write_sample(args, out + j, load_integer(args.col, edge), edge, i);
    }
  }
};

// csr_add_self_loop (graph_op.h): one work item per row, plus one for the final row pointer.
struct SelfLoopArgs {
  const int32_t* row_ptr;
  const int32_t* col;
  int32_t* out_row_ptr;
  int32_t* out_col;
  int64_t rows;
};

struct SelfLoopKernel {
  using Args = SelfLoopArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto row = static_cast<int64_t>(item);
    if (row == args.rows) {
      args.out_row_ptr[row] = args.row_ptr[row] + static_cast<int32_t>(row);
      return;
    }
    const int32_t start = args.row_ptr[row], end = args.row_ptr[row + 1];
    const int32_t out = start + static_cast<int32_t>(row);
    args.out_row_ptr[row] = out;
    args.out_col[out] = static_cast<int32_t>(row);
    for (int32_t e = start; e < end; ++e) args.out_col[out + 1 + (e - start)] = args.col[e];
  }
};

}  // namespace memloom::kernels
