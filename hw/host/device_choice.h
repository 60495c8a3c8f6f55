// Which device a process works on, decided the same way by both backends: MEMLOOM_DEVICE (set by
// memloom-run), else MEMLOOM_LOCAL_RANK spread over the devices, else the device the calling
// thread chose itself (cudaSetDevice, which torch.cuda.set_device calls: what upstream WholeMemory
// uses), else device 0. A pure function of its inputs, so the rule is tested without a GPU; the
// backend finds out which device the thread chose.
#pragma once

#include <string>

#include "src/base/environment.h"

namespace memloom::host {

struct DeviceChoice {
  int device = 0;
  std::string reason;  // which rule won, for the debug log
  bool fixed = false;  // a variable decided: later changes of the thread's device are not followed
};

// `count` devices exist; `thread_device` is the device the calling thread made current, -1 when
// it chose none. `devices_name` names them in messages ("GPUs", "emulated devices"). kInvalidValue
// when MEMLOOM_DEVICE names a device that does not exist.
DeviceChoice choose_device(const base::Environment& env, int count, int thread_device,
                           const std::string& devices_name);

}  // namespace memloom::host
