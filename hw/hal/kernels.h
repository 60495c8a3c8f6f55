// The kernel table shared by every backend. Kernel bodies live in src/kernels/ as
// MEMLOOM_HOST_DEVICE functions; each backend maps a KernelId to a runner (CPU threads or a CUDA
// grid) over the same body.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memloom::hal {

enum class KernelId : uint32_t {
  kFillPattern = 0,       // ops/fill_kernel.h: FillPatternArgs
  kGather = 1,            // ops/row_copy_kernel.h: RowCopyArgs, indexed source rows
  kScatter = 2,           // ops/row_copy_kernel.h: RowCopyArgs, indexed destination rows
  kCountByOwner = 3,      // ops/owner_routing_kernel.h: OwnerRoutingArgs, rows per owning rank
  kPlaceByOwner = 4,      // ops/owner_routing_kernel.h: OwnerRoutingArgs, rows into owners' buckets
  kOptimizerApply = 5,    // optimizer_kernel.h: OptimizerApplyArgs, a sparse optimizer step
  kSampleCount = 6,       // sampling_kernel.h: SampleArgs, samples per centre node
  kSampleNeighbours = 7,  // sampling_kernel.h: SampleArgs, the samples of each centre node
  kAddSelfLoop = 8,       // sampling_kernel.h: SelfLoopArgs, a CSR with a self loop per row
  kIndexRequests = 9,     // row_grouping_kernel.h: IndexRequestsArgs, an apply's requests
  kGroupRows = 10,        // row_grouping_kernel.h: GroupRowsArgs, one item: requests by row
  kScanCounts = 11,       // count_scan_kernel.h: ScanCountsArgs, one item: offsets from counts
  kCount,
};

struct KernelLaunch {
  KernelId id;
  const void* args;   // points to the kernel's argument struct; copied at enqueue time
  size_t args_size;   // sizeof that struct; checked by the backend
  size_t work_items;  // the index range [0, work_items) the body runs over
};

}  // namespace memloom::hal
