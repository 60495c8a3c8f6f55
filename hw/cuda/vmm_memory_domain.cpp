#include "hw/cuda/vmm_memory_domain.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/device_range_export.h"
#include "hw/cuda/host_registrations.h"
#include "hw/cuda/vmm_segment.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/base/unique_fd.h"

namespace memloom::cuda {
namespace {

constexpr unsigned kHostRegisterFlags = cudaHostRegisterPortable | cudaHostRegisterMapped;

using base::hex;

CUmemAllocationProp device_properties(int device, bool fabric) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes =
      fabric ? static_cast<CUmemAllocationHandleType>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                                      CU_MEM_HANDLE_TYPE_FABRIC)
             : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

const hal::Segment& checked(const hal::Segment& segment, const char* operation) {
  if (dynamic_cast<const DeviceSegment*>(&segment) == nullptr &&
      dynamic_cast<const HostSegment*>(&segment) == nullptr) {
    raise(Status::kInvalidInput,
          std::string(operation) + ": the segment belongs to another backend");
  }
  return segment;
}

}  // namespace

VmmMemoryDomain::VmmMemoryDomain(const std::atomic<int>& current_device)
    : current_device_(current_device), access_(std::make_shared<DeviceAccess>()) {
  granularity_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  bool any_fabric = false;
  for (int device = 0; device < access_->devices(); ++device) {
    CUmemAllocationProp prop = device_properties(device, false);
    size_t device_granularity = 0;
    check_cu(
        cuMemGetAllocationGranularity(&device_granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
    granularity_ = std::max(granularity_, device_granularity);
    CUdevice handle;
    int fabric = 0;
    check_cu(cuDeviceGet(&handle, device), "cuDeviceGet");
    if (cuDeviceGetAttribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, handle) ==
            CUDA_SUCCESS &&
        fabric != 0) {
      any_fabric = true;
    }
  }
  try_fabric_ = any_fabric;
}

VmmMemoryDomain::~VmmMemoryDomain() {
  for (const auto& [address, mapping] : anywhere_) {
    if (mapping.payload.device) {
      (void)cuMemUnmap(static_cast<CUdeviceptr>(address), mapping.size);
      (void)cuMemAddressFree(static_cast<CUdeviceptr>(address), mapping.size);
    } else {
      (void)cudaHostUnregister(reinterpret_cast<void*>(address));
      ::munmap(reinterpret_cast<void*>(address), mapping.size);
    }
  }
  for (const auto& [address, registration] : registered_) {
    if (registration.payload.pinned_here)
      (void)cudaHostUnregister(reinterpret_cast<void*>(address));
  }
}

// One granularity for both kinds: offsets inside a range follow the same rule whatever is mapped.
size_t VmmMemoryDomain::granularity(hal::MemoryKind) const {
  return granularity_;
}

void VmmMemoryDomain::check_multiple(const char* what, size_t value) const {
  if (value == 0 || value % granularity_ != 0) {
    raise(Status::kInvalidInput, std::string(what) + " " + std::to_string(value) +
                                     " is not a positive multiple of the granularity " +
                                     std::to_string(granularity_));
  }
}

uintptr_t VmmMemoryDomain::checked_reservation(size_t size, void* fixed_address) const {
  check_multiple("reservation size", size);
  const auto at = reinterpret_cast<uintptr_t>(fixed_address);
  if (at % granularity_ != 0) {
    raise(Status::kInvalidInput, "fixed address " + hex(at) +
                                     " is not aligned to the granularity " +
                                     std::to_string(granularity_));
  }
  return at;
}

CUmemGenericAllocationHandle VmmMemoryDomain::create_device_allocation(int device, size_t size) {
  CUmemGenericAllocationHandle handle = 0;
  if (try_fabric_) {
    CUmemAllocationProp prop = device_properties(device, true);
    CUresult result = cuMemCreate(&handle, size, &prop, 0);
    if (result == CUDA_SUCCESS) return handle;
    if (result == CUDA_ERROR_OUT_OF_MEMORY) raise_cu(result, "cuMemCreate");
    MEMLOOM_LOG(kInfo, "fabric memory handles refused (" << describe_cu(result)
                                                         << "); using POSIX fds only");
    try_fabric_ = false;
  }
  CUmemAllocationProp prop = device_properties(device, false);
  CUresult result = cuMemCreate(&handle, size, &prop, 0);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    raise(Status::kOutOfMemory, "device " + std::to_string(device) + " has no room for " +
                                    std::to_string(size) + " more bytes (cuMemCreate)");
  }
  check_cu(result, "cuMemCreate");
  return handle;
}

std::unique_ptr<hal::Segment> VmmMemoryDomain::allocate(hal::MemoryKind kind, int device,
                                                        size_t size) {
  check_multiple("allocation size", size);
  if (kind == hal::MemoryKind::kHost) return HostSegment::create(size);
  if (kind != hal::MemoryKind::kDevice) {
    raise(Status::kInvalidInput, "unknown memory kind " + std::to_string(static_cast<int>(kind)));
  }
  if (device < 0 || device >= access_->devices()) {
    raise(Status::kInvalidInput, "device " + std::to_string(device) + " does not exist (" +
                                     std::to_string(access_->devices()) + " visible GPUs)");
  }
  DeviceGuard guard(device);
  return std::make_unique<DeviceSegment>(create_device_allocation(device, size), device, size);
}

hal::ExportedSegment VmmMemoryDomain::export_segment(const hal::Segment& segment) {
  checked(segment, "export_segment");
  hal::ExportedSegment exported;
  exported.descriptor =
      SegmentDescriptor{segment.kind(), segment.device(), segment.size()}.encode();
  if (const auto* host = dynamic_cast<const HostSegment*>(&segment)) {
    exported.fd = ::fcntl(host->fd(), F_DUPFD_CLOEXEC, 0);
    if (exported.fd < 0) raise_errno("duplicating a host segment's fd for export", errno);
    return exported;
  }
  const auto& device = dynamic_cast<const DeviceSegment&>(segment);
  int fd = -1;
  check_cu(cuMemExportToShareableHandle(&fd, device.handle(),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           "cuMemExportToShareableHandle");
  exported.fd = fd;
  return exported;
}

std::unique_ptr<hal::Segment> VmmMemoryDomain::import_segment(hal::ExportedSegment exported) {
  // We own exported.fd from here on, whether the import succeeds or not.
  base::UniqueFd owned(exported.fd);
  const SegmentDescriptor descriptor = SegmentDescriptor::decode(exported.descriptor);
  if (owned.get() < 0) raise(Status::kInvalidInput, "import_segment: the export carries no fd");
  if (descriptor.size == 0 || descriptor.size % granularity_ != 0) {
    raise(Status::kInvalidInput, "imported segment of " + std::to_string(descriptor.size) +
                                     " bytes is not a multiple of the granularity " +
                                     std::to_string(granularity_));
  }
  if (descriptor.kind == hal::MemoryKind::kHost) {
    auto segment = HostSegment::adopt(owned.get(), descriptor.size);
    owned.release();  // the segment owns it now
    return segment;
  }
  DeviceGuard guard(current_device_.load());
  CUmemGenericAllocationHandle handle = 0;
  check_cu(cuMemImportFromShareableHandle(
               &handle, reinterpret_cast<void*>(static_cast<intptr_t>(owned.get())),
               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           "cuMemImportFromShareableHandle");
  // The handle holds the allocation now; the fd is closed by `owned`. The owner's ordinal in
  // this process comes from the driver: it differs when processes see different device sets.
  CUmemAllocationProp prop{};
  int device = descriptor.device;
  if (cuMemGetAllocationPropertiesFromHandle(&prop, handle) == CUDA_SUCCESS &&
      prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    device = prop.location.id;
  }
  return std::make_unique<DeviceSegment>(handle, device, descriptor.size);
}

std::unique_ptr<hal::VaRange> VmmMemoryDomain::reserve(size_t size, void* fixed_address) {
  const uintptr_t at = checked_reservation(size, fixed_address);
  const size_t reserved = driver_reservation_size(size);
  const int context = current_device_.load();
  DeviceGuard guard(context);
  using Holds = VmmVaRange::Holds;
  if (fixed_address == nullptr) {
    // Device memory is the common case: a driver reservation. Asked for at an address of ours in
    // free space, whole units, so that the driver gives the range back when it is freed (a host
    // segment coming first needs a plain reservation at the same base).
    thread_local std::mt19937_64 random(std::random_device{}());
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint64_t low = 0x100000000000ull, high = 0x600000000000ull, slot = size_t(1) << 30;
      const uint64_t hint = low + random() % ((high - low - reserved) / slot) * slot;
      std::string why;
      if (driver_ranges_->overlaps(hint, reserved)) continue;
      if (reserve_driver_range_at(reinterpret_cast<void*>(hint), reserved, granularity_, &why)) {
        return std::make_unique<VmmVaRange>(access_, driver_ranges_, reinterpret_cast<void*>(hint),
                                            size, reserved, granularity_, Holds::kDriverReservation,
                                            context);
      }
    }
    // The driver's own choice still serves device memory (not host memory: it keeps the range).
    CUdeviceptr got = 0;
    check_cu(cuMemAddressReserve(&got, size, granularity_, 0, 0), "cuMemAddressReserve");
    return std::make_unique<VmmVaRange>(access_, driver_ranges_,
                                        reinterpret_cast<void*>(static_cast<uintptr_t>(got)), size,
                                        size, granularity_, Holds::kDriverReservation, context);
  }
  if (driver_ranges_->overlaps(at, reserved)) {
    raise(Status::kNotSupported,
          "the address range at " + hex(at) + " (+" + std::to_string(size) + " bytes) is not free");
  }
  // A plain reservation first: it serves host segments for sure and becomes a driver reservation
  // when a device segment comes. Where the driver already holds the CPU side (address space it
  // keeps after releasing it), its own reservation at the address is the way in.
  try {
    void* base = reserve_cpu_range(reserved, granularity_, fixed_address);
    return std::make_unique<VmmVaRange>(access_, driver_ranges_, base, size, reserved, granularity_,
                                        Holds::kCpuReservation, context);
  } catch (const Error& error) {
    if (error.status() != Status::kNotSupported) throw;
    std::string why;
    if (reserve_driver_range_at(fixed_address, reserved, granularity_, &why)) {
      return std::make_unique<VmmVaRange>(access_, driver_ranges_, fixed_address, size, reserved,
                                          granularity_, Holds::kDriverReservation, context);
    }
    raise(Status::kNotSupported,
          std::string(error.what()) + "; nor will the CUDA driver reserve it (" + why + ")");
  }
}

std::unique_ptr<hal::VaRange> VmmMemoryDomain::reserve_for(hal::MemoryKind kind, size_t size,
                                                           void* fixed_address) {
  if (kind == hal::MemoryKind::kHost && fixed_address == nullptr) {
    // Host memory anywhere: a plain reservation at once. Starting as a driver reservation would
    // need a conversion, which fails where the driver keeps the address space it placed itself.
    check_multiple("reservation size", size);
    DeviceGuard guard(current_device_.load());
    void* base = reserve_cpu_range(size, granularity_, nullptr);
    return std::make_unique<VmmVaRange>(access_, driver_ranges_, base, size, size, granularity_,
                                        VmmVaRange::Holds::kCpuReservation, current_device_.load());
  }
  if (kind != hal::MemoryKind::kDevice || fixed_address == nullptr) {
    return reserve(size, fixed_address);
  }
  // Device memory at an agreed address: the driver reservation is made now. The driver has been
  // seen to place a hinted reservation elsewhere in one process of a group while honouring the
  // same hint in the others; refused here, the caller's agreement loop tries another address.
  const uintptr_t at = checked_reservation(size, fixed_address);
  const size_t reserved = driver_reservation_size(size);
  if (driver_ranges_->overlaps(at, reserved)) {
    raise(Status::kNotSupported,
          "the address range at " + hex(at) + " (+" + std::to_string(size) + " bytes) is not free");
  }
  const int context = current_device_.load();
  DeviceGuard guard(context);
  std::string why;
  if (!reserve_driver_range_at(fixed_address, reserved, granularity_, &why)) {
    raise(Status::kNotSupported, "the CUDA driver will not reserve device address space at " +
                                     hex(at) + " (+" + std::to_string(size) + " bytes): " + why);
  }
  return std::make_unique<VmmVaRange>(access_, driver_ranges_, fixed_address, size, reserved,
                                      granularity_, VmmVaRange::Holds::kDriverReservation, context);
}

void* VmmMemoryDomain::map_anywhere(const hal::Segment& segment) {
  checked(segment, "map_anywhere");
  const size_t size = segment.size();
  void* address = nullptr;
  const bool device = segment.kind() == hal::MemoryKind::kDevice;
  if (device) {
    DeviceGuard guard(segment.device());
    CUdeviceptr reserved = 0;
    check_cu(cuMemAddressReserve(&reserved, size, granularity_, 0, 0), "cuMemAddressReserve");
    address = reinterpret_cast<void*>(static_cast<uintptr_t>(reserved));
    try {
      map_device_segment(*access_, address, segment);
    } catch (...) {
      (void)cuMemAddressFree(reserved, size);
      throw;
    }
  } else {
    DeviceGuard guard(current_device_.load());
    address = reserve_cpu_range(size, granularity_, nullptr);
    try {
      map_host_segment(address, segment);
    } catch (...) {
      ::munmap(address, size);
      throw;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Fresh address space (driver or kernel) cannot overlap a live mapping.
  anywhere_.insert(reinterpret_cast<uintptr_t>(address), size, AnywhereMapping{device});
  return address;
}

void VmmMemoryDomain::unmap_anywhere(void* address, size_t size) {
  const auto start = reinterpret_cast<uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto* mapping = &anywhere_.expect(address, size);
  if (mapping->payload.device) {
    check_cu(cuMemUnmap(static_cast<CUdeviceptr>(start), size), "cuMemUnmap");
    check_cu(cuMemAddressFree(static_cast<CUdeviceptr>(start), size), "cuMemAddressFree");
  } else {
    DeviceGuard guard(current_device_.load());
    unmap_host_segment(address, size);
    ::munmap(address, size);
  }
  anywhere_.erase(start);
}

void VmmMemoryDomain::register_user_memory(void* address, size_t size) {
  const uintptr_t start = Registrations::check_range(address, size);
  std::lock_guard<std::mutex> lock(mutex_);
  if (registered_.already_registered(start, size)) return;
  DeviceGuard guard(current_device_.load());
  bool pinned_here = false;
  if (!is_device_pointer(address)) {
    cudaError_t result = cudaHostRegister(address, size, kHostRegisterFlags);
    if (result == cudaSuccess) {
      pinned_here = true;
      note_host_registered(address, size);
    } else if (result == cudaErrorHostMemoryAlreadyRegistered) {
      (void)cudaGetLastError();  // pinned by its owner (a mapped host segment, the user)
    } else {
      (void)cudaGetLastError();
      raise(Status::kInvalidInput, "register_user_memory: [" + hex(start) + ", +" +
                                       std::to_string(size) +
                                       ") cannot be pinned: " + cudaGetErrorString(result));
    }
  }
  registered_.insert(start, size, Registration{pinned_here});  // no clash: checked above
}

void VmmMemoryDomain::unregister_user_memory(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto* registration = &registered_.expect_start(address);
  if (registration->payload.pinned_here) {
    note_host_unregistered(address);
    DeviceGuard guard(current_device_.load());
    check_cuda(cudaHostUnregister(address), "cudaHostUnregister");
  }
  registered_.erase(reinterpret_cast<uintptr_t>(address));
}

bool VmmMemoryDomain::is_device_memory(const void* address) const {
  return is_device_pointer(address);
}

std::optional<hal::ExportedSegment> VmmMemoryDomain::export_device_range(const void* address,
                                                                         size_t size) {
  return cuda::export_device_range(address, size, current_device_.load());
}

std::unique_ptr<hal::ImportedRange> VmmMemoryDomain::import_device_range(
    hal::ExportedSegment exported) {
  return cuda::import_device_range(std::move(exported), access_, current_device_.load(),
                                   granularity_);
}

}  // namespace memloom::cuda
