// VaRange of the CUDA backend, plus the mapping primitives the memory domain shares with it.
//
// A range holds device segments or host segments, not both: device memory can only be mapped
// (cuMemMap) into address space the CUDA driver reserved (cuMemAddressReserve), while host
// segments are memfds mapped with mmap(MAP_FIXED) and then pinned (cudaHostRegister), which the
// driver refuses inside its own reservations. So a range starts as a plain PROT_NONE reservation
// (which is how a common base address is probed on every rank) and becomes a driver reservation at
// the same base when its first device segment is mapped.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/hal/memory_domain.h"

namespace memloom::cuda {

// Which of this process's devices may access memory owned by which device (peer access).
class DeviceAccess {
 public:
  DeviceAccess();  // reads the topology of the visible devices
  int devices() const { return devices_; }
  // Read/write access descriptors for every device that can reach `owner`'s memory.
  const std::vector<CUmemAccessDesc>& for_owner(int owner) const;

 private:
  int devices_ = 0;
  std::vector<std::vector<CUmemAccessDesc>> by_owner_;
};

// Reserves `size` inaccessible bytes aligned to `alignment` with mmap; with `fixed_address` the
// range starts exactly there or kNotSupported is thrown.
void* reserve_cpu_range(size_t size, size_t alignment, void* fixed_address);

// Maps a device segment (DeviceSegment) at `address`, inside a driver reservation, readable and
// writable by every device that can reach it.
void map_device_segment(const DeviceAccess& access, void* address, const hal::Segment& segment);
// Maps a host segment (HostSegment) at `address`, over part of a CPU reservation, and pins it.
void map_host_segment(void* address, const hal::Segment& segment);
// Undoes map_host_segment, leaving the addresses reserved (PROT_NONE) again.
void unmap_host_segment(void* address, size_t size);

class VmmVaRange : public hal::VaRange {
 public:
  VmmVaRange(std::shared_ptr<const DeviceAccess> access, void* base, size_t size,
             size_t granularity)
      : access_(std::move(access)),
        base_(static_cast<char*>(base)),
        size_(size),
        granularity_(granularity) {}
  ~VmmVaRange() override;
  VmmVaRange(const VmmVaRange&) = delete;
  VmmVaRange& operator=(const VmmVaRange&) = delete;

  void* base() const override { return base_; }
  size_t size() const override { return size_; }
  void map(size_t offset, const hal::Segment& segment) override;
  // [offset, offset+size) must cover whole mappings (at least one, none of them partly).
  void unmap(size_t offset, size_t size) override;

 private:
  enum class Holds { kNothingYet, kHost, kDevice };
  void become_device_reservation();

  const std::shared_ptr<const DeviceAccess> access_;
  char* const base_;
  const size_t size_;
  const size_t granularity_;
  std::mutex mutex_;
  Holds holds_ = Holds::kNothingYet;
  int context_device_ = 0;             // a device whose context is made current for driver calls
  std::map<size_t, size_t> mappings_;  // offset -> size
};

}  // namespace memloom::cuda
