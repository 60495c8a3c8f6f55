#include "src/wholememory/blocking_copy.h"

#include "src/core/group.h"
#include "src/core/platform_loader.h"

namespace memloom::wholememory {

BlockingCopier::BlockingCopier(int device) : stream_(core::platform().create_stream(device)) {}

BlockingCopier::~BlockingCopier() = default;

void BlockingCopier::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  stream_->copy(dst, src, bytes);
  stream_->synchronize(Deadline::after(core::default_collective_timeout()));
}

}  // namespace memloom::wholememory
