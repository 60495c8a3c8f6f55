#include "src/smem/trans/stream_submit.h"

#include "hw/hal/stream.h"
#include "src/core/platform_loader.h"

namespace memloom::smem::trans {

void submit_in_stream_order(void* stream, std::function<void()> work, Deadline deadline) {
  hal::Platform& platform = core::platform();
  if (platform.name() == "emulated") {
    static_cast<hal::Stream*>(stream)->host_function(std::move(work));
    return;
  }
  platform.adopt_stream(stream)->synchronize(deadline);
  work();
}

}  // namespace memloom::smem::trans
