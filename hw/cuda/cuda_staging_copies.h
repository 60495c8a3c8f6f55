// Many small copies between device memory and page-locked host memory in one kernel launch, for
// the UCX transport's staging (cuda_buffer_staging.h): the copy engine spends about 1.9 us on each
// 4 KiB piece of a scattered batch (H100), a launch about as much for a whole message's pieces.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memloom::cuda {

// Copies that travel by value as the kernel's argument (CUDA passes 4 KiB of them).
struct StagingCopyList {
  static constexpr size_t kMaxCopies = 128;
  uint64_t to[kMaxCopies];
  uint64_t from[kMaxCopies];
  uint64_t bytes[kMaxCopies];
  uint32_t count = 0;
};

// Queues `list` on `stream`, a block a copy; both sides must be addresses the stream's device can
// load and store (its own memory, page-locked host memory through unified addressing). Copies of
// one list must not overlap: they run in no order.
void launch_staging_copies(const StagingCopyList& list, cudaStream_t stream);

}  // namespace memloom::cuda
