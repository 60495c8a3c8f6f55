// A BufferStaging for buffers that are all host memory: plain copies and plain allocations. The UCX
// transport bounces a call's bytes through buffers of its own where UCX may keep a request after
// the call gave up (endpoints without peer error handling, ucx_am_requests.h, "Own buffers"); on
// the emulated backend, which has no device staging, this is what fills and empties them.
#pragma once

#include "hw/host/buffer_staging.h"

namespace memloom::host {

class HostMemoryStaging : public BufferStaging {
 public:
  bool needs_staging(const void* pointer) const override;
  void copy(void* to, const void* from, size_t bytes, Deadline deadline) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* buffer) noexcept override;
};

}  // namespace memloom::host
