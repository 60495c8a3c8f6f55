// The CUDA MemoryDomain: device segments are CUDA VMM allocations exported as POSIX fds, host
// segments are memfds pinned with cudaHostRegister wherever they are mapped (vmm_segment.h);
// ranges and mappings are described in vmm_va_range.h. User memory is pinned with
// cudaHostRegister (device memory needs nothing).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "hw/cuda/vmm_va_range.h"
#include "hw/hal/memory_domain.h"
#include "hw/host/memory_domain_ledger.h"

namespace memloom::cuda {

class VmmMemoryDomain : public hal::MemoryDomain {
 public:
  // `current_device` is the platform's current device, used for host-memory work that needs a
  // CUDA context on the calling thread.
  explicit VmmMemoryDomain(const std::atomic<int>& current_device);
  ~VmmMemoryDomain() override;

  size_t granularity(hal::MemoryKind kind) const override;
  std::unique_ptr<hal::Segment> allocate(hal::MemoryKind kind, int device, size_t size) override;
  hal::ExportedSegment export_segment(const hal::Segment& segment) override;
  std::unique_ptr<hal::Segment> import_segment(hal::ExportedSegment exported) override;
  std::unique_ptr<hal::VaRange> reserve(size_t size, void* fixed_address) override;
  std::unique_ptr<hal::VaRange> reserve_for(hal::MemoryKind kind, size_t size,
                                            void* fixed_address) override;
  void* map_anywhere(const hal::Segment& segment) override;
  void unmap_anywhere(void* address, size_t size) override;
  void register_user_memory(void* address, size_t size) override;
  void unregister_user_memory(void* address) override;
  // Legacy (cudaMalloc) memory through CUDA IPC handles, VMM memory through POSIX fds; a range
  // must lie inside one allocation (device_range_export.h).
  bool is_device_memory(const void* address) const override;
  std::optional<hal::ExportedSegment> export_device_range(const void* address,
                                                          size_t size) override;
  std::unique_ptr<hal::ImportedRange> import_device_range(hal::ExportedSegment exported) override;

 private:
  void check_multiple(const char* what, size_t value) const;
  // Checks a reservation's size and fixed address (null or granularity-aligned); the address.
  uintptr_t checked_reservation(size_t size, void* fixed_address) const;
  CUmemGenericAllocationHandle create_device_allocation(int device, size_t size);

  const std::atomic<int>& current_device_;
  const std::shared_ptr<const DeviceAccess> access_;
  const std::shared_ptr<DriverRanges> driver_ranges_ = std::make_shared<DriverRanges>();
  size_t granularity_ = 0;
  // Fabric handles (multi-node NVLink) are asked for where the device claims support; a driver
  // without IMEX refuses them at the first allocation, after which only POSIX fds are asked for.
  std::atomic<bool> try_fabric_{false};

  struct AnywhereMapping {
    bool device;  // a driver reservation with device memory mapped; else pinned host memory
  };
  struct Registration {
    bool pinned_here;  // false when the memory was device memory or already pinned by its owner
  };
  std::mutex mutex_;
  host::AnywhereMappings<AnywhereMapping> anywhere_;
  using Registrations = host::UserRegistrations<Registration>;
  Registrations registered_;  // user memory
};

}  // namespace memloom::cuda
