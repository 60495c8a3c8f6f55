#include "hw/cuda/vmm_va_range.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/host_registrations.h"
#include "hw/cuda/vmm_segment.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/base/range_map.h"

namespace memloom::cuda {
namespace {

using base::first_overlap;
using base::hex;  // addresses here are never null, so it prints what "%p" printed

CUdeviceptr device_address(const void* address) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(address));
}

}  // namespace

DeviceAccess::DeviceAccess() {
  check_cu(cuDeviceGetCount(&devices_), "cuDeviceGetCount");
  by_owner_.resize(devices_);
  for (int owner = 0; owner < devices_; ++owner) {
    CUdevice owner_device;
    check_cu(cuDeviceGet(&owner_device, owner), "cuDeviceGet");
    for (int accessor = 0; accessor < devices_; ++accessor) {
      int can = accessor == owner ? 1 : 0;
      if (accessor != owner) {
        CUdevice accessor_device;
        check_cu(cuDeviceGet(&accessor_device, accessor), "cuDeviceGet");
        check_cu(cuDeviceCanAccessPeer(&can, accessor_device, owner_device),
                 "cuDeviceCanAccessPeer");
      }
      if (can == 0) continue;
      CUmemAccessDesc desc{};
      desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      desc.location.id = accessor;
      desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      by_owner_[owner].push_back(desc);
    }
  }
}

const std::vector<CUmemAccessDesc>& DeviceAccess::for_owner(int owner) const {
  if (owner < 0 || owner >= devices_) {
    raise(Status::kInvalidInput, "device " + std::to_string(owner) + " is not visible here (" +
                                     std::to_string(devices_) + " devices)");
  }
  return by_owner_[owner];
}

void* reserve_cpu_range(size_t size, size_t alignment, void* fixed_address) {
  if (fixed_address != nullptr) {
    if (reinterpret_cast<uintptr_t>(fixed_address) % alignment != 0) {
      raise(Status::kInvalidInput, "fixed address " + hex(fixed_address) + " is not aligned to " +
                                       std::to_string(alignment));
    }
    void* got = ::mmap(fixed_address, size, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {
      raise(Status::kNotSupported, "the address range at " + hex(fixed_address) + " (+" +
                                       std::to_string(size) + " bytes) is not free");
    }
    if (got != fixed_address) {  // kernels before 4.17 treat the flag as a hint
      ::munmap(got, size);
      raise(Status::kNotSupported, "the address range at " + hex(fixed_address) + " is not free");
    }
    return got;
  }
  // Over-reserve, then trim to an aligned range.
  const size_t padded = size + alignment;
  void* raw =
      ::mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) raise_errno("reserving " + std::to_string(size) + " bytes", errno);
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + alignment - 1) / alignment * alignment;
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t end = start + padded;
  if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  return reinterpret_cast<void*>(aligned);
}

void map_device_segment(const DeviceAccess& access, void* address, const hal::Segment& segment) {
  const auto* cuda_segment = dynamic_cast<const DeviceSegment*>(&segment);
  if (cuda_segment == nullptr) raise(Status::kInvalidInput, "map: not a CUDA device segment");
  const DeviceSegment& device = *cuda_segment;
  const CUdeviceptr at = device_address(address);
  check_cu(cuMemMap(at, device.size(), 0, device.handle(), 0), "cuMemMap");
  const auto& descs = access.for_owner(device.device());
  CUresult result = cuMemSetAccess(at, device.size(), descs.data(), descs.size());
  if (result != CUDA_SUCCESS && descs.size() > 1) {
    // A peer that refuses the mapping must not cost the owner its own access.
    MEMLOOM_LOG(kWarn, "granting peer devices access to a segment of device "
                           << device.device() << " failed (" << describe_cu(result)
                           << "); only the owning device gets access");
    for (const auto& desc : descs) {
      if (desc.location.id != device.device()) continue;
      result = cuMemSetAccess(at, device.size(), &desc, 1);
    }
  }
  if (result != CUDA_SUCCESS) {
    (void)cuMemUnmap(at, device.size());
    raise_cu(result, "cuMemSetAccess");
  }
}

void map_host_segment(void* address, const hal::Segment& segment) {
  const auto* cuda_segment = dynamic_cast<const HostSegment*>(&segment);
  if (cuda_segment == nullptr) raise(Status::kInvalidInput, "map: not a CUDA host segment");
  const HostSegment& host = *cuda_segment;
  void* got =
      ::mmap(address, host.size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, host.fd(), 0);
  if (got == MAP_FAILED) raise_errno("mapping a host segment at " + hex(address), errno);
  cudaError_t result =
      cudaHostRegister(address, host.size(), cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (result != cudaSuccess) {
    ::mmap(address, host.size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
           -1, 0);
    raise_cuda(result, "cudaHostRegister of a host segment");
  }
  note_host_registered(address, host.size());
}

void unmap_host_segment(void* address, size_t size) {
  note_host_unregistered(address);
  cudaError_t result = cudaHostUnregister(address);
  if (result != cudaSuccess) {
    (void)cudaGetLastError();
    MEMLOOM_LOG(
        kWarn, "cudaHostUnregister(" << hex(address) << ") failed: " << cudaGetErrorString(result));
  }
  if (::mmap(address, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) == MAP_FAILED) {
    raise_errno("unmapping a host segment at " + hex(address), errno);
  }
}

bool reserve_driver_range_at(void* address, size_t size, size_t alignment, std::string* why) {
  // The driver treats the address as a hint; try its default alignment too.
  for (size_t align : {alignment, size_t{0}}) {
    CUdeviceptr got = 0;
    CUresult result = cuMemAddressReserve(&got, size, align, device_address(address), 0);
    if (result == CUDA_SUCCESS && got == device_address(address)) return true;
    if (result == CUDA_SUCCESS) {
      (void)cuMemAddressFree(got, size);
      *why = "the driver placed it at " + hex(reinterpret_cast<void*>(static_cast<uintptr_t>(got)));
    } else {
      *why = "cuMemAddressReserve: " + describe_cu(result);
    }
  }
  return false;
}

size_t driver_reservation_size(size_t size) {
  return (std::max(size, kHintedReservationUnit) + kHintedReservationUnit - 1) /
         kHintedReservationUnit * kHintedReservationUnit;
}

void DriverRanges::add(uintptr_t base, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_[base] = size;
}

void DriverRanges::remove(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_.erase(base);
}

bool DriverRanges::overlaps(uintptr_t base, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_overlap(ranges_, base, size) != ranges_.end();
}

VmmVaRange::VmmVaRange(std::shared_ptr<const DeviceAccess> access,
                       std::shared_ptr<DriverRanges> driver, void* base, size_t size,
                       size_t reserved, size_t granularity, Holds holds, int context_device)
    : access_(std::move(access)),
      driver_(std::move(driver)),
      base_(static_cast<char*>(base)),
      size_(size),
      reserved_(reserved),
      granularity_(granularity),
      holds_(holds),
      context_device_(context_device) {
  if (holds_ == Holds::kDriverReservation) {
    driver_->add(reinterpret_cast<uintptr_t>(base_), reserved_);
  }
}

VmmVaRange::~VmmVaRange() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<DeviceGuard> guard;
  try {
    guard = std::make_unique<DeviceGuard>(context_device_);
  } catch (const Error&) {
    // Without a context the unmaps below fail harmlessly; process exit releases the memory.
  }
  for (const auto& [offset, size] : mappings_) {
    if (holds_ == Holds::kDriverReservation) {
      (void)cuMemUnmap(device_address(base_ + offset), size);
    } else {
      (void)cudaHostUnregister(base_ + offset);
    }
  }
  if (holds_ == Holds::kDriverReservation) {
    (void)cuMemAddressFree(device_address(base_), reserved_);
    driver_->remove(reinterpret_cast<uintptr_t>(base_));
  } else {
    ::munmap(base_, reserved_);
  }
}

void VmmVaRange::become_driver_reservation() {
  if (::munmap(base_, reserved_) != 0) raise_errno("releasing a CPU reservation", errno);
  std::string why;
  if (reserve_driver_range_at(base_, reserved_, granularity_, &why)) {
    holds_ = Holds::kDriverReservation;
    driver_->add(reinterpret_cast<uintptr_t>(base_), reserved_);
    return;
  }
  // Take the range back so this object still owns what its destructor releases.
  void* again = ::mmap(base_, reserved_, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (again != base_) {
    if (again != MAP_FAILED) ::munmap(again, reserved_);
    MEMLOOM_LOG(kError, "lost the address range at " << hex(base_) << " while converting it");
  }
  raise(Status::kNotSupported,
        "device memory cannot be mapped at " + hex(base_) + " (+" + std::to_string(size_) +
            " bytes): the CUDA driver will not reserve that range (" + why + ")");
}

void VmmVaRange::become_cpu_reservation() {
  const auto base = reinterpret_cast<uintptr_t>(base_);
  check_cu(cuMemAddressFree(device_address(base_), reserved_), "cuMemAddressFree");
  driver_->remove(base);
  void* got = ::mmap(base_, reserved_, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == base_) {
    holds_ = Holds::kCpuReservation;
    return;
  }
  const int error = errno;
  if (got != MAP_FAILED) ::munmap(got, reserved_);
  std::string why;
  if (reserve_driver_range_at(base_, reserved_, granularity_, &why)) {
    driver_->add(base, reserved_);
  } else {
    MEMLOOM_LOG(kError, "lost the address range at " << hex(base_) << " while converting it");
  }
  raise(Status::kNotSupported,
        "host memory cannot be mapped at " + hex(base_) + " (+" + std::to_string(size_) +
            " bytes): the CUDA driver keeps that range after releasing it (" +
            std::strerror(error) + ")");
}

void VmmVaRange::map(size_t offset, const hal::Segment& segment) {
  const size_t size = segment.size();
  if (offset % granularity_ != 0 || size == 0 || size % granularity_ != 0) {
    raise(Status::kInvalidInput,
          "map: offset " + std::to_string(offset) + " and size " + std::to_string(size) +
              " must be multiples of the granularity " + std::to_string(granularity_));
  }
  if (offset > size_ || size > size_ - offset) {
    raise(Status::kInvalidInput, "map: [" + std::to_string(offset) + ", +" + std::to_string(size) +
                                     ") lies outside the range of " + std::to_string(size_) +
                                     " bytes");
  }
  const bool device = segment.kind() == hal::MemoryKind::kDevice;
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_overlap(mappings_, offset, size) != mappings_.end()) {
    raise(Status::kInvalidInput, "map: [" + std::to_string(offset) + ", +" + std::to_string(size) +
                                     ") overlaps an existing mapping");
  }
  const Holds wanted = device ? Holds::kDriverReservation : Holds::kCpuReservation;
  if (holds_ != wanted) {
    if (!mappings_.empty()) {
      raise(Status::kNotSupported,
            "the CUDA backend cannot map host and device segments into one address range "
            "(device memory needs a driver reservation, pinned host memory a plain one)");
    }
    DeviceGuard guard(context_device_);
    if (device) {
      become_driver_reservation();
    } else {
      become_cpu_reservation();
    }
  }
  if (device) {
    DeviceGuard guard(segment.device());  // the driver calls below need a current context
    map_device_segment(*access_, base_ + offset, segment);
  } else {
    DeviceGuard guard(context_device_);
    map_host_segment(base_ + offset, segment);
  }
  mappings_.emplace(offset, size);
}

void VmmVaRange::unmap(size_t offset, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto first = mappings_.find(offset);
  if (first == mappings_.end()) {
    raise(Status::kInvalidInput, "unmap: no mapping starts at offset " + std::to_string(offset));
  }
  auto last = first;
  size_t covered = 0;
  while (last != mappings_.end() && last->first == offset + covered && covered < size) {
    covered += last->second;
    ++last;
  }
  if (covered != size) {
    raise(Status::kInvalidInput, "unmap: [" + std::to_string(offset) + ", +" +
                                     std::to_string(size) +
                                     ") does not cover whole, adjacent mappings");
  }
  DeviceGuard guard(context_device_);
  for (auto it = first; it != last; ++it) {
    if (holds_ == Holds::kDriverReservation) {
      check_cu(cuMemUnmap(device_address(base_ + it->first), it->second), "cuMemUnmap");
    } else {
      unmap_host_segment(base_ + it->first, it->second);
    }
  }
  mappings_.erase(first, last);
}

}  // namespace memloom::cuda
