// Capacity accounting of the emulated devices, so that running out of "HBM" fails like the real
// thing (kOutOfMemory) instead of quietly eating host memory.
//
// The accounting is per process: each process charges what it allocates itself. An imported
// segment is charged to its exporter only, and two processes on one emulated node can each fill a
// device to its capacity. A node-wide count would need shared state that survives crashed peers;
// per-process accounting keeps failures local and is what tests of capacity need.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace memloom::emulated {

class DeviceBudget;

// What one allocation holds of a device's capacity. Segments and every mapping of them share it,
// so the capacity comes back when the last of them is gone, as device memory does on CUDA once a
// released handle is also unmapped.
class CapacityCharge {
 public:
  CapacityCharge(std::shared_ptr<DeviceBudget> budget, int device, size_t bytes)
      : budget_(std::move(budget)), device_(device), bytes_(bytes) {}
  ~CapacityCharge();
  CapacityCharge(const CapacityCharge&) = delete;
  CapacityCharge& operator=(const CapacityCharge&) = delete;

 private:
  std::shared_ptr<DeviceBudget> budget_;
  int device_;
  size_t bytes_;
};

class DeviceBudget : public std::enable_shared_from_this<DeviceBudget> {
 public:
  DeviceBudget(int devices, size_t capacity_per_device);

  int devices() const { return static_cast<int>(used_.size()); }
  size_t capacity() const { return capacity_; }
  size_t used(int device);

  // Takes `bytes` of `device`; throws kOutOfMemory naming the device, the request and what is left.
  std::shared_ptr<CapacityCharge> charge(int device, size_t bytes);

 private:
  friend class CapacityCharge;
  void release(int device, size_t bytes);

  const size_t capacity_;
  std::mutex mutex_;
  std::vector<size_t> used_;
};

// "1.5 MiB": byte counts in messages people read.
std::string format_bytes(size_t bytes);

}  // namespace memloom::emulated
