#include "hw/cuda/device_range_export.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/wire_descriptor.h"
#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

constexpr uint32_t kRangeMagic = 0x52444c4d;  // "MLDR"
constexpr uint32_t kRangeVersion = 1;

enum class RangeKind : uint32_t { kLegacyIpc = 1, kVmmFd = 2 };

// Everything but the fd an importer needs. Both processes run the same build on one node, so the
// struct travels as raw bytes.
struct WireRange {
  uint32_t magic;
  uint32_t version;
  uint32_t kind;
  int32_t device;             // the owner's device ordinal, in the owner's numbering
  uint64_t allocation_size;   // bytes of the whole allocation
  uint64_t offset;            // of the range's first byte in the allocation
  uint64_t size;              // of the range
  cudaIpcMemHandle_t handle;  // kLegacyIpc only
};

struct OwnedFd {
  int fd;
  ~OwnedFd() {
    if (fd >= 0) ::close(fd);
  }
};

// A pointer attribute, or false when the driver does not know the pointer. Read into a zeroed
// 64-bit word: the attributes used here are booleans and ints, written in its low bytes.
bool pointer_attribute(CUpointer_attribute attribute, const void* address, uint64_t* value) {
  *value = 0;
  return cuPointerGetAttribute(value, attribute,
                               static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(address))) ==
         CUDA_SUCCESS;
}

WireRange decode(const std::vector<uint8_t>& bytes) {
  const auto wire =
      decode_wire<WireRange>(bytes, "device range descriptor", kRangeMagic, kRangeVersion);
  if (wire.kind != static_cast<uint32_t>(RangeKind::kLegacyIpc) &&
      wire.kind != static_cast<uint32_t>(RangeKind::kVmmFd)) {
    raise(Status::kInvalidInput,
          "device range descriptor of unknown kind " + std::to_string(wire.kind));
  }
  if (wire.size == 0 || wire.offset > wire.allocation_size ||
      wire.size > wire.allocation_size - wire.offset) {
    raise(Status::kInvalidInput, "device range descriptor: range [" + std::to_string(wire.offset) +
                                     ", +" + std::to_string(wire.size) +
                                     ") is outside its allocation of " +
                                     std::to_string(wire.allocation_size) + " bytes");
  }
  return wire;
}

// A legacy allocation opened with cudaIpcOpenMemHandle (reference counted by the driver per
// handle and context, so two ranges of one allocation may each hold it).
class LegacyImport : public hal::ImportedRange {
 public:
  LegacyImport(void* base, int device, uint64_t offset, uint64_t size)
      : base_(base), device_(device), offset_(offset), size_(size) {}
  ~LegacyImport() override {
    DeviceGuard guard(device_);
    cudaError_t result = cudaIpcCloseMemHandle(base_);
    if (result != cudaSuccess) {
      (void)cudaGetLastError();
      MEMLOOM_LOG(kWarn, "cudaIpcCloseMemHandle failed: " << cudaGetErrorString(result));
    }
  }
  void* address() const override { return static_cast<char*>(base_) + offset_; }
  size_t size() const override { return size_; }

 private:
  void* base_;
  int device_;  // the device whose context opened the handle
  uint64_t offset_;
  uint64_t size_;
};

// A VMM allocation imported from its fd and mapped at an address of this process.
class VmmImport : public hal::ImportedRange {
 public:
  VmmImport(CUmemGenericAllocationHandle handle, CUdeviceptr base, uint64_t allocation_size,
            uint64_t offset, uint64_t size)
      : handle_(handle),
        base_(base),
        allocation_size_(allocation_size),
        offset_(offset),
        size_(size) {}
  ~VmmImport() override {
    if (mapped_) (void)cuMemUnmap(base_, allocation_size_);
    if (base_ != 0) (void)cuMemAddressFree(base_, allocation_size_);
    (void)cuMemRelease(handle_);  // the owner's memory goes once its own references are gone
  }
  void* address() const override {
    return reinterpret_cast<char*>(static_cast<uintptr_t>(base_)) + offset_;
  }
  size_t size() const override { return size_; }
  void set_mapped() { mapped_ = true; }

 private:
  CUmemGenericAllocationHandle handle_;
  CUdeviceptr base_;
  uint64_t allocation_size_;
  uint64_t offset_;
  uint64_t size_;
  bool mapped_ = false;
};

std::unique_ptr<hal::ImportedRange> import_vmm(const WireRange& wire, int fd,
                                               const std::shared_ptr<const DeviceAccess>& access,
                                               int current_device, size_t granularity) {
  if (wire.allocation_size % granularity != 0) {
    raise(Status::kInvalidInput, "imported allocation of " + std::to_string(wire.allocation_size) +
                                     " bytes is not a multiple of the granularity " +
                                     std::to_string(granularity));
  }
  DeviceGuard guard(current_device);
  CUmemGenericAllocationHandle handle = 0;
  check_cu(
      cuMemImportFromShareableHandle(&handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
      "cuMemImportFromShareableHandle");
  CUdeviceptr base = 0;
  CUresult reserved = cuMemAddressReserve(&base, wire.allocation_size, granularity, 0, 0);
  // From here the object owns the handle and the reservation.
  auto import = std::make_unique<VmmImport>(handle, reserved == CUDA_SUCCESS ? base : 0,
                                            wire.allocation_size, wire.offset, wire.size);
  check_cu(reserved, "cuMemAddressReserve");
  check_cu(cuMemMap(base, wire.allocation_size, 0, handle, 0), "cuMemMap");
  import->set_mapped();
  // The owner's ordinal in this process comes from the driver: processes may see different
  // device sets. Devices with peer access to it get access; where none is known, ours alone.
  int owner = -1;
  CUmemAllocationProp prop{};
  if (cuMemGetAllocationPropertiesFromHandle(&prop, handle) == CUDA_SUCCESS &&
      prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    owner = prop.location.id;
  }
  std::vector<CUmemAccessDesc> descs;
  if (owner >= 0 && owner < access->devices()) descs = access->for_owner(owner);
  bool has_current = false;
  for (const auto& desc : descs) has_current = has_current || desc.location.id == current_device;
  if (!has_current) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = current_device;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    descs.push_back(desc);
  }
  CUresult result = cuMemSetAccess(base, wire.allocation_size, descs.data(), descs.size());
  if (result != CUDA_SUCCESS && descs.size() > 1) {
    // Only the copying device needs access; a peer that refuses must not cost it.
    for (const auto& desc : descs) {
      if (desc.location.id == current_device) {
        result = cuMemSetAccess(base, wire.allocation_size, &desc, 1);
      }
    }
  }
  check_cu(result, "cuMemSetAccess on imported device memory");
  return import;
}

}  // namespace

std::optional<hal::ExportedSegment> export_device_range(const void* address, size_t size,
                                                        int current_device) {
  if (address == nullptr || size == 0) return std::nullopt;
  DeviceGuard guard(current_device);
  uint64_t memory_type = 0;
  if (!pointer_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address, &memory_type) ||
      memory_type != CU_MEMORYTYPE_DEVICE) {
    return std::nullopt;  // host memory (registered or not) or unknown to the driver
  }
  const auto start = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(address));
  CUdeviceptr base = 0;
  size_t allocation_size = 0;
  check_cu(cuMemGetAddressRange(&base, &allocation_size, start), "cuMemGetAddressRange");
  const uint64_t offset = start - base;
  if (size > allocation_size - offset) {
    MEMLOOM_LOG(kDebug, "device range of " << size << " bytes spans several allocations: "
                                           << "not exported");
    return std::nullopt;
  }
  // The ordinal only matters for legacy memory (whose context makes the IPC handle), where the
  // attribute is always known.
  uint64_t device = static_cast<uint64_t>(current_device);
  if (!pointer_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address, &device)) {
    device = static_cast<uint64_t>(current_device);
  }
  WireRange wire{};
  wire.magic = kRangeMagic;
  wire.version = kRangeVersion;
  wire.device = static_cast<int32_t>(static_cast<uint32_t>(device));
  wire.allocation_size = allocation_size;
  wire.offset = offset;
  wire.size = size;
  hal::ExportedSegment exported;
  uint64_t legacy = 0;
  if (pointer_attribute(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, address, &legacy) &&
      legacy != 0) {
    wire.kind = static_cast<uint32_t>(RangeKind::kLegacyIpc);
    DeviceGuard owner(wire.device);
    check_cuda(
        cudaIpcGetMemHandle(&wire.handle, reinterpret_cast<void*>(static_cast<uintptr_t>(base))),
        "cudaIpcGetMemHandle");
  } else {
    // A VMM mapping: its allocation handle, exportable only if it was created for POSIX fds.
    CUmemGenericAllocationHandle handle = 0;
    if (cuMemRetainAllocationHandle(&handle, const_cast<void*>(address)) != CUDA_SUCCESS) {
      return std::nullopt;  // neither legacy nor VMM: e.g. stream-ordered pool memory
    }
    int fd = -1;
    CUresult result =
        cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    (void)cuMemRelease(handle);  // the retain's reference; the fd holds its own
    if (result != CUDA_SUCCESS) {
      MEMLOOM_LOG(kDebug, "device memory not exportable as a POSIX fd: " << describe_cu(result));
      return std::nullopt;
    }
    wire.kind = static_cast<uint32_t>(RangeKind::kVmmFd);
    exported.fd = fd;
  }
  exported.descriptor = encode_wire(wire);
  return exported;
}

std::unique_ptr<hal::ImportedRange> import_device_range(
    hal::ExportedSegment exported, const std::shared_ptr<const DeviceAccess>& access,
    int current_device, size_t granularity) {
  OwnedFd owned{exported.fd};  // ours from here on, whether the import succeeds or not
  const WireRange wire = decode(exported.descriptor);
  if (wire.kind == static_cast<uint32_t>(RangeKind::kVmmFd)) {
    if (owned.fd < 0) raise(Status::kInvalidInput, "import of a VMM device range without its fd");
    // The driver's import takes its own reference: the fd is closed either way.
    return import_vmm(wire, owned.fd, access, current_device, granularity);
  }
  DeviceGuard guard(current_device);
  void* base = nullptr;
  cudaError_t result = cudaIpcOpenMemHandle(&base, wire.handle, cudaIpcMemLazyEnablePeerAccess);
  if (result != cudaSuccess) {
    (void)cudaGetLastError();
    raise_cuda(result, "cudaIpcOpenMemHandle");
  }
  return std::make_unique<LegacyImport>(base, current_device, wire.offset, wire.size);
}

}  // namespace memloom::cuda
