// get_device_prop (wholememory/env_func_ptrs.h): the backend's native description of a device.
// The struct is CUDA's, so this file only passes its address along and never needs its layout.
#include <exception>

#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "wholememory/env_func_ptrs.h"

extern "C" struct cudaDeviceProp* get_device_prop(int dev_id) {
  try {
    const void* properties = memloom::core::platform().native_device_properties(dev_id);
    if (properties == nullptr) {
      MEMLOOM_LOG(kError, "get_device_prop: the " << memloom::core::platform().name()
                                                  << " backend's devices have no CUDA properties");
    }
    return static_cast<struct cudaDeviceProp*>(const_cast<void*>(properties));
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kError, "get_device_prop(" << dev_id << ") failed: " << error.what());
    return nullptr;
  }
}
