// VaRange of the emulated backend: a PROT_NONE anonymous reservation into which memfd segments are
// mapped with MAP_FIXED. Unmapping puts inaccessible memory back, so the reservation stays whole
// and no other mmap of the process can land inside it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "hw/emulated/device_budget.h"
#include "hw/hal/memory_domain.h"

namespace memloom::emulated {

// Reserves `size` inaccessible bytes aligned to `alignment` (a power of two, at least a page).
// With `fixed_address` the range starts exactly there or kNotSupported is thrown.
void* reserve_address_range(size_t size, size_t alignment, void* fixed_address);

class VaReservation : public hal::VaRange {
 public:
  VaReservation(void* base, size_t size, size_t granularity)
      : base_(static_cast<char*>(base)), size_(size), granularity_(granularity) {}
  ~VaReservation() override;
  VaReservation(const VaReservation&) = delete;
  VaReservation& operator=(const VaReservation&) = delete;

  void* base() const override { return base_; }
  size_t size() const override { return size_; }
  void map(size_t offset, const hal::Segment& segment) override;
  // [offset, offset+size) must cover whole mappings (at least one, none of them partly).
  void unmap(size_t offset, size_t size) override;

 private:
  struct Mapping {
    size_t size;
    std::shared_ptr<CapacityCharge> charge;  // keeps the device's capacity taken while mapped
  };

  char* const base_;
  const size_t size_;
  const size_t granularity_;
  std::mutex mutex_;
  std::map<size_t, Mapping> mappings_;  // by offset
};

}  // namespace memloom::emulated
