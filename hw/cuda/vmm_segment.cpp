#include "hw/cuda/vmm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "hw/cuda/wire_descriptor.h"
#include "memloom/error.h"

namespace memloom::cuda {
namespace {

constexpr uint32_t kDescriptorMagic = 0x4d4c4355;  // "MLCU"
constexpr uint32_t kDescriptorVersion = 1;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

struct WireDescriptor {
  uint32_t magic;
  uint32_t version;
  int32_t kind;
  int32_t device;
  uint64_t size;
};

// MemAvailable of /proc/meminfo in bytes, or SIZE_MAX when it cannot be read.
size_t host_memory_available() {
  FILE* file = std::fopen("/proc/meminfo", "re");
  if (file == nullptr) return SIZE_MAX;
  char line[256];
  size_t bytes = SIZE_MAX;
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      bytes = static_cast<size_t>(kib) * 1024;
      break;
    }
  }
  std::fclose(file);
  return bytes;
}

}  // namespace

DeviceSegment::~DeviceSegment() {
  // Mappings and importers hold their own references; the memory goes when the last one does.
  (void)cuMemRelease(handle_);
}

std::unique_ptr<HostSegment> HostSegment::create(size_t size) {
  // Committing more than the host has would not fail cleanly: the kernel would reclaim until the
  // OOM killer steps in. What cannot fit is refused up front.
  const size_t available = host_memory_available();
  if (size > available) {
    raise(Status::kOutOfMemory, "host memory exhausted: a host segment of " + std::to_string(size) +
                                    " bytes, " + std::to_string(available) + " available");
  }
  int fd = ::memfd_create("memloom-cuda-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) raise_errno("memfd_create for a host segment", errno);
  auto segment = std::unique_ptr<HostSegment>(new HostSegment(fd, size));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    raise_errno("sizing a host segment of " + std::to_string(size) + " bytes", errno);
  }
  // Commit the pages now: a host that cannot hold the segment fails here, not at a later fault.
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (rc == ENOSPC || rc == ENOMEM) {
    raise(Status::kOutOfMemory,
          "host memory exhausted allocating a host segment of " + std::to_string(size) + " bytes");
  }
  if (rc != 0) raise_errno("committing a host segment", rc);
  if (::fcntl(fd, F_ADD_SEALS, kSeals) != 0) raise_errno("sealing a host segment", errno);
  return segment;
}

std::unique_ptr<HostSegment> HostSegment::adopt(int fd, size_t size) {
  auto segment = std::unique_ptr<HostSegment>(new HostSegment(fd, size));
  struct stat status {};
  if (::fstat(fd, &status) != 0) raise_errno("fstat of an imported host segment", errno);
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (static_cast<uint64_t>(status.st_size) != size || seals < 0 ||
      (static_cast<unsigned>(seals) & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
          (F_SEAL_SHRINK | F_SEAL_GROW)) {
    raise(Status::kInvalidInput,
          "imported host segment is not a sealed memfd of " + std::to_string(size) + " bytes");
  }
  return segment;
}

HostSegment::~HostSegment() {
  ::close(fd_);
}

std::vector<uint8_t> SegmentDescriptor::encode() const {
  WireDescriptor wire{kDescriptorMagic, kDescriptorVersion, static_cast<int32_t>(kind), device,
                      size};
  return encode_wire(wire);
}

SegmentDescriptor SegmentDescriptor::decode(const std::vector<uint8_t>& bytes) {
  const auto wire = decode_wire<WireDescriptor>(bytes, "segment descriptor", kDescriptorMagic,
                                                kDescriptorVersion);
  if (wire.kind != static_cast<int32_t>(hal::MemoryKind::kDevice) &&
      wire.kind != static_cast<int32_t>(hal::MemoryKind::kHost)) {
    raise(Status::kInvalidInput,
          "segment descriptor names an unknown memory kind " + std::to_string(wire.kind));
  }
  return SegmentDescriptor{static_cast<hal::MemoryKind>(wire.kind), wire.device, wire.size};
}

}  // namespace memloom::cuda
