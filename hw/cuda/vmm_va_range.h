// VaRange of the CUDA backend, plus the mapping primitives the memory domain shares with it.
//
// A range holds device segments or host segments, not both: device memory can only be mapped
// (cuMemMap) into address space the CUDA driver reserved (cuMemAddressReserve), while host
// segments are memfds mapped with mmap(MAP_FIXED) and then pinned (cudaHostRegister), which the
// driver refuses inside its own reservations. The HAL's reserve() does not say which kind will
// come, so a range starts as one kind of reservation and, while still empty, is swapped for the
// other kind at the same base when its first segment asks for it:
// - a range the domain placed itself starts as a driver reservation (device memory is the common
//   case, and the driver then needs no address hint);
// - a range at a fixed address (a global virtual address agreed by every rank) starts as a plain
//   PROT_NONE reservation, or as a driver reservation where only the driver can place it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
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

// Seen on H200s with driver 580 (CUDA 13): cuMemAddressReserve treats its address as a hint that
// it ignores for reservations small enough to come from a pool of address space the driver keeps
// (and keeps after they are freed). Before NCCL starts, reservations of 32 MiB are honoured; once a
// communicator exists the pool has grown and 32 MiB ones are placed inside it, while 1 GiB ones
// are still honoured. So every reservation that may need to sit at a chosen address is made in
// whole 1 GiB units (address space only: nothing is committed).
inline constexpr size_t kHintedReservationUnit = size_t(1) << 30;
// `size` rounded up to whole units (at least one).
size_t driver_reservation_size(size_t size);

// Asks the driver for `size` bytes of address space at exactly `address` (trying the alignments
// the driver may want); false, with the driver's answer in `why`, when it will not.
bool reserve_driver_range_at(void* address, size_t size, size_t alignment, std::string* why);

// The driver reservations of this process that the domain made, so a plain reservation is never
// placed over one (the driver may not hold the CPU side of its reservations).
class DriverRanges {
 public:
  void add(uintptr_t base, size_t size);
  void remove(uintptr_t base);
  bool overlaps(uintptr_t base, size_t size);

 private:
  std::mutex mutex_;
  std::map<uintptr_t, size_t> ranges_;
};

// Maps a device segment (DeviceSegment) at `address`, inside a driver reservation, readable and
// writable by every device that can reach it.
void map_device_segment(const DeviceAccess& access, void* address, const hal::Segment& segment);
// Maps a host segment (HostSegment) at `address`, over part of a CPU reservation, and pins it.
void map_host_segment(void* address, const hal::Segment& segment);
// Undoes map_host_segment, leaving the addresses reserved (PROT_NONE) again.
void unmap_host_segment(void* address, size_t size);

class VmmVaRange : public hal::VaRange {
 public:
  enum class Holds { kDriverReservation, kCpuReservation };
  // Adopts a reservation of kind `holds` of `reserved` bytes at `base`, of which the first
  // `size` are the range (the rest is padding, see kHintedReservationUnit). `context_device` is a
  // device whose context the driver calls run under.
  VmmVaRange(std::shared_ptr<const DeviceAccess> access, std::shared_ptr<DriverRanges> driver,
             void* base, size_t size, size_t reserved, size_t granularity, Holds holds,
             int context_device);
  ~VmmVaRange() override;
  VmmVaRange(const VmmVaRange&) = delete;
  VmmVaRange& operator=(const VmmVaRange&) = delete;

  void* base() const override { return base_; }
  size_t size() const override { return size_; }
  void map(size_t offset, const hal::Segment& segment) override;
  // [offset, offset+size) must cover whole mappings (at least one, none of them partly).
  void unmap(size_t offset, size_t size) override;

 private:
  // Swap the (empty) reservation for the other kind at the same base.
  void become_driver_reservation();
  void become_cpu_reservation();

  const std::shared_ptr<const DeviceAccess> access_;
  const std::shared_ptr<DriverRanges> driver_;
  char* const base_;
  const size_t size_;
  const size_t reserved_;
  const size_t granularity_;
  std::mutex mutex_;
  Holds holds_;
  int context_device_;                 // a device whose context is made current for driver calls
  std::map<size_t, size_t> mappings_;  // offset -> size
};

}  // namespace memloom::cuda
