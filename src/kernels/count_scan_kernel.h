// Offsets from counts on the device (hw/hal/kernels.h: KernelId::kScanCounts): one work item, the
// whole list: offsets[i] = counts[0] + ... + counts[i - 1] for i in [0, count], so offsets[count]
// is the total. `counts` has count + 1 entries, the last 0 (what an inclusive end needs). INT32
// throughout: the caller launches it only when the total cannot pass 2^31 - 1. The CUDA backend
// runs CUB's scan in scratch memory sized by Platform::kernel_scratch_bytes; the CPU one a loop.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memloom::kernels {

struct ScanCountsArgs {
  const int32_t* counts;  // count + 1, the last 0
  int32_t* offsets;       // count + 1
  int64_t count;
  void* scratch;
  size_t scratch_bytes;
};

}  // namespace memloom::kernels
