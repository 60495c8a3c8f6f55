#include "hw/emulated/device_budget.h"

#include <cstdio>
#include <string>

#include "memloom/error.h"

namespace memloom::emulated {

CapacityCharge::~CapacityCharge() {
  budget_->release(device_, bytes_);
}

DeviceBudget::DeviceBudget(int devices, size_t capacity_per_device)
    : capacity_(capacity_per_device), used_(static_cast<size_t>(devices), 0) {}

size_t DeviceBudget::used(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_.at(static_cast<size_t>(device));
}

std::shared_ptr<CapacityCharge> DeviceBudget::charge(int device, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t& used = used_.at(static_cast<size_t>(device));
    const size_t left = capacity_ - used;
    if (bytes > left) {
      raise(Status::kOutOfMemory,
            "emulated device " + std::to_string(device) + " is out of memory: requested " +
                format_bytes(bytes) + ", " + format_bytes(left) + " left of " +
                format_bytes(capacity_) +
                " (per-process accounting; MEMLOOM_EMU_DEVICE_MEM sets the capacity)");
    }
    used += bytes;
  }
  return std::make_shared<CapacityCharge>(shared_from_this(), device, bytes);
}

void DeviceBudget::release(int device, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  used_[static_cast<size_t>(device)] -= bytes;
}

std::string format_bytes(size_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    value /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s (%zu bytes)", value, kUnits[unit], bytes);
  }
  return text;
}

}  // namespace memloom::emulated
