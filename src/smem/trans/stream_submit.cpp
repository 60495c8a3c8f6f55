#include "src/smem/trans/stream_submit.h"

#include <exception>

#include "hw/hal/stream.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"

namespace memloom::smem::trans {

void submit_in_stream_order(void* stream, std::function<void()> work, Deadline deadline) {
  (void)deadline;
  hal::Platform& platform = core::platform();
  auto logged = [work = std::move(work)] {
    try {
      work();
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kError, "a submitted transfer failed: " << error.what());
      throw;
    }
  };
  // The adopted wrapper may go at once: the function stays queued on the native stream.
  platform.adopt_stream(stream)->host_function(std::move(logged));
}

}  // namespace memloom::smem::trans
