// A memory segment of the emulated backend: an anonymous Linux memfd (nothing in /dev/shm, so
// nothing can leak after a crash), shared with other processes by passing its descriptor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hw/emulated/device_budget.h"
#include "hw/hal/memory_domain.h"

namespace memloom::emulated {

class MemfdSegment : public hal::Segment {
 public:
  // Creates, sizes, commits and seals a new memfd. `charge` is null for host memory.
  static std::unique_ptr<MemfdSegment> create(hal::MemoryKind kind, int device, size_t size,
                                              std::shared_ptr<CapacityCharge> charge);
  // Adopts an imported descriptor whose size and seals were already checked.
  MemfdSegment(int fd, hal::MemoryKind kind, int device, size_t size,
               std::shared_ptr<CapacityCharge> charge)
      : fd_(fd), kind_(kind), device_(device), size_(size), charge_(std::move(charge)) {}
  ~MemfdSegment() override;
  MemfdSegment(const MemfdSegment&) = delete;
  MemfdSegment& operator=(const MemfdSegment&) = delete;

  size_t size() const override { return size_; }
  hal::MemoryKind kind() const override { return kind_; }
  int device() const override { return device_; }

  int fd() const { return fd_; }
  // Mappings hold this too, so the device's capacity returns only when the memory is truly gone.
  const std::shared_ptr<CapacityCharge>& charge() const { return charge_; }

 private:
  int fd_;
  hal::MemoryKind kind_;
  int device_;
  size_t size_;
  std::shared_ptr<CapacityCharge> charge_;
};

// The descriptor bytes of an exported segment: what the importer needs besides the fd.
struct SegmentDescriptor {
  hal::MemoryKind kind;
  int device;  // -1 for host memory
  uint64_t size;

  std::vector<uint8_t> encode() const;
  // Throws kInvalidInput when the bytes are not a descriptor of this backend and version.
  static SegmentDescriptor decode(const std::vector<uint8_t>& bytes);
};

// Checks that `fd` is a sealed memfd of exactly `size` bytes (so mapping it can never fault on a
// later truncation); throws kInvalidInput otherwise.
void check_segment_fd(int fd, size_t size);

}  // namespace memloom::emulated
