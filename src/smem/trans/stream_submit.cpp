#include "src/smem/trans/stream_submit.h"

#include <dlfcn.h>

#include <string>

#include "hw/hal/stream.h"
#include "memloom/error.h"
#include "src/core/platform_loader.h"

namespace memloom::smem::trans {
namespace {

using CudaStreamSynchronizeFn = int (*)(void*);

// The CUDA runtime the CUDA backend module already loaded (never loads one itself).
CudaStreamSynchronizeFn cuda_stream_synchronize() {
  for (const char* name :
       {"libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0", "libcudart.so"}) {
    void* runtime = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (runtime == nullptr) continue;
    auto fn = reinterpret_cast<CudaStreamSynchronizeFn>(::dlsym(runtime, "cudaStreamSynchronize"));
    ::dlclose(runtime);  // drops only the reference NOLOAD took
    if (fn != nullptr) return fn;
  }
  raise(Status::kNotSupported,
        "the CUDA backend is active but no CUDA runtime is loaded in this process");
}

}  // namespace

void submit_in_stream_order(void* stream, std::function<void()> work) {
  hal::Platform& platform = core::platform();
  if (platform.name() == "emulated") {
    static_cast<hal::Stream*>(stream)->host_function(std::move(work));
    return;
  }
  int status = cuda_stream_synchronize()(stream);
  if (status != 0) {
    raise(Status::kDevice, "cudaStreamSynchronize before the transfer failed with CUDA error " +
                               std::to_string(status));
  }
  work();
}

}  // namespace memloom::smem::trans
