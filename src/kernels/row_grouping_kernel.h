// Grouping a gradient apply's requests by row on the device (hw/hal/kernels.h:
// KernelId::kIndexRequests, kGroupRows), so that the optimizer kernel sees each distinct row once
// without the indices crossing to the host.
//
//   index requests: one work item per index of the caller's list: request i asks for local row
//                   indices[i] with position -1 - i (row i of the caller's gradients, as
//                   OptimizerApplyArgs::positions says). A negative index asks for nothing; an
//                   index past the table asks for nothing and records its list position in
//                   first_bad (the lowest one wins), so the caller can refuse the call before any
//                   update.
//   group rows:     one work item, the whole list: a stable sort of the requests by key, then one
//                   group per distinct key in ascending order. Stable, so a row's positions keep
//                   their list order and its gradients are summed in that fixed order on every
//                   backend (WholeMemory's duplicate semantics: summed, one step per row).
//                   The CUDA backend sorts with CUB's radix sort in scratch memory sized by
//                   Platform::kernel_scratch_bytes; the CPU one counts (dense keys) or sorts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/kernels/atomics.h"
#include "src/kernels/element_types.h"
#include "src/kernels/host_device.h"

namespace memloom::kernels {

struct IndexRequestsArgs {
  const void* indices;
  DType index_type;  // kInt or kInt64
  int64_t count;
  int64_t rows;                   // the table's rows; an index at or past it is bad
  int64_t* keys;                  // count: the local row, or -1 for no request
  int64_t* positions;             // count: -1 - i
  unsigned long long* first_bad;  // ~0 before the launch
};

struct IndexRequestsKernel {
  using Args = IndexRequestsArgs;

  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto i = static_cast<int64_t>(item);
    const int64_t index = args.index_type == DType::kInt
                              ? static_cast<const int32_t*>(args.indices)[i]
                              : static_cast<const int64_t*>(args.indices)[i];
    args.positions[i] = -1 - i;
    if (index >= args.rows) {
      atomic_min(args.first_bad, static_cast<unsigned long long>(i));
      args.keys[i] = -1;
      return;
    }
    args.keys[i] = index < 0 ? -1 : index;
  }
};

struct GroupRowsArgs {
  const int64_t* keys;       // count: a key outside [0, key_limit) asks for nothing
  const int64_t* positions;  // count: the value that travels with each key
  int64_t count;
  int64_t key_limit;
  int64_t* rows;                    // out, up to count: the distinct keys, ascending
  int64_t* first;                   // out, count + 1: group u is grouped_positions[first[u]..)
  int64_t* grouped_positions;       // out, count: positions in key order, list order within a key
  unsigned long long* group_count;  // out: the number of groups
  void* scratch;                    // Platform::kernel_scratch_bytes(kGroupRows, count) bytes
  size_t scratch_bytes;
};

}  // namespace memloom::kernels
