#include "hw/host/device_choice.h"

#include "memloom/error.h"

namespace memloom::host {

DeviceChoice choose_device(const base::Environment& env, int count, int thread_device,
                           const std::string& devices_name) {
  MEMLOOM_CHECK_ARG(count > 0, "no " + devices_name + " to choose from");
  DeviceChoice choice;
  if (env.device >= 0) {
    if (env.device >= count) {
      raise(Status::kInvalidValue, "MEMLOOM_DEVICE=" + std::to_string(env.device) + " but only " +
                                       std::to_string(count) + " " + devices_name + " exist");
    }
    choice.device = env.device;
    choice.reason = "MEMLOOM_DEVICE=" + std::to_string(env.device);
    choice.fixed = true;
  } else if (env.local_rank >= 0) {
    choice.device = env.local_rank % count;
    choice.reason = "MEMLOOM_LOCAL_RANK=" + std::to_string(env.local_rank) + " over " +
                    std::to_string(count) + " " + devices_name;
    choice.fixed = true;
  } else if (thread_device >= 0 && thread_device < count) {
    choice.device = thread_device;
    choice.reason =
        "the calling thread's current device (MEMLOOM_DEVICE and MEMLOOM_LOCAL_RANK unset)";
  } else {
    choice.device = 0;
    choice.reason = "the default, device 0 (no variable set and no device chosen by the thread)";
  }
  return choice;
}

}  // namespace memloom::host
