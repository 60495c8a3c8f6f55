// The CUDA backend module's entry point. The backend itself (VMM memory domain, CUDA streams,
// NCCL collectives) is the subject of a later issue; until then loading the module reports that
// it is not yet available instead of pretending to work.
#include <cuda.h>
#include <nccl.h>

#include "hw/hal/platform.h"
#include "memloom/error.h"

extern "C" __attribute__((visibility("default"))) memloom::hal::Platform* memloom_create_platform() {
  memloom::raise(memloom::Status::kNotImplemented,
                 "the CUDA backend module is not yet available in this build of memloom "
                 "(CUDA driver API " + std::to_string(CUDA_VERSION) + ", NCCL " +
                     std::to_string(NCCL_VERSION_CODE) + "); use MEMLOOM_BACKEND=emulated");
}
