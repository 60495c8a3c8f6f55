// The emulated MemoryDomain: device and host segments are sealed Linux memfds (see
// memfd_segment.h), exported as descriptor bytes plus a duplicated fd, mapped with mmap into
// PROT_NONE reservations (va_reservation.h). Emulated devices have a capacity (device_budget.h);
// host memory is limited only by the OS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <variant>

#include "hw/emulated/device_budget.h"
#include "hw/hal/memory_domain.h"
#include "hw/host/memory_domain_ledger.h"

namespace memloom::emulated {

class MemfdMemoryDomain : public hal::MemoryDomain {
 public:
  // `granularity`: a power of two, at least the page size (checked by the caller's options).
  MemfdMemoryDomain(int devices, size_t device_capacity, size_t granularity);
  // Unmaps what map_anywhere mapped and nobody unmapped.
  ~MemfdMemoryDomain() override;

  size_t granularity(hal::MemoryKind kind) const override;
  // `device` selects the emulated device for kDevice and is ignored for kHost.
  std::unique_ptr<hal::Segment> allocate(hal::MemoryKind kind, int device, size_t size) override;
  hal::ExportedSegment export_segment(const hal::Segment& segment) override;
  std::unique_ptr<hal::Segment> import_segment(hal::ExportedSegment exported) override;
  std::unique_ptr<hal::VaRange> reserve(size_t size, void* fixed_address) override;
  void* map_anywhere(const hal::Segment& segment) override;
  void unmap_anywhere(void* address, size_t size) override;
  void register_user_memory(void* address, size_t size) override;
  void unregister_user_memory(void* address) override;
  // Every kind is memfd memory mapped into the process.
  bool memory_is_host_accessible() const override { return true; }

  // Bytes of `device` this process holds (allocations and mappings still alive).
  size_t device_used(int device) { return budget_->used(device); }

 private:
  void check_multiple(const char* what, size_t value) const;

  const size_t granularity_;
  const std::shared_ptr<DeviceBudget> budget_;

  std::mutex mutex_;
  // What map_anywhere mapped, each holding its device's capacity until it is unmapped.
  host::AnywhereMappings<std::shared_ptr<CapacityCharge>> anywhere_;
  using Registrations = host::UserRegistrations<std::monostate>;
  Registrations registered_;  // user memory
};

}  // namespace memloom::emulated
