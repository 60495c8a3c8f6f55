#include "hw/emulated/memfd_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "memloom/error.h"

namespace memloom::emulated {
namespace {

constexpr uint32_t kDescriptorMagic = 0x464d4c4d;  // "MLMF" little-endian
constexpr uint16_t kDescriptorVersion = 1;
// Importers rely on these: the size can never change under their mappings.
constexpr int kRequiredSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

#pragma pack(push, 1)
struct WireDescriptor {
  uint32_t magic;
  uint16_t version;
  uint8_t kind;
  uint8_t reserved;
  int32_t device;
  uint64_t size;
};
#pragma pack(pop)

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

[[noreturn]] void raise_allocation_error(const std::string& what, int error, size_t size) {
  if (error == ENOSPC || error == ENOMEM || error == EFBIG) {
    raise(Status::kOutOfMemory,
          what + " of " + format_bytes(size) + " failed: " + std::strerror(error));
  }
  raise_errno(what + " of " + format_bytes(size), error);
}

// MemAvailable of /proc/meminfo in bytes, or SIZE_MAX when it cannot be read.
size_t host_memory_available() {
  FILE* file = std::fopen("/proc/meminfo", "re");
  if (file == nullptr) return SIZE_MAX;
  char line[256];
  size_t kib = SIZE_MAX;
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    unsigned long long value = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &value) == 1) {
      kib = static_cast<size_t>(value);
      break;
    }
  }
  std::fclose(file);
  return kib == SIZE_MAX ? SIZE_MAX : kib * 1024;
}

}  // namespace

std::unique_ptr<MemfdSegment> MemfdSegment::create(hal::MemoryKind kind, int device, size_t size,
                                                   std::shared_ptr<CapacityCharge> charge) {
  // The name only shows in /proc/<pid>/fd and /proc/<pid>/maps, where it helps debugging.
  // Committing memory the host does not have would not fail cleanly: the kernel would keep
  // reclaiming and end in the OOM killer. Refuse what cannot fit up front.
  const size_t available = host_memory_available();
  if (size > available) {
    raise(Status::kOutOfMemory, "cannot allocate " + format_bytes(size) + " of emulated " +
                                    (kind == hal::MemoryKind::kDevice ? "device" : "host") +
                                    " memory: the host has " + format_bytes(available) +
                                    " available");
  }
  const std::string name = kind == hal::MemoryKind::kDevice ? "memloom-dev" + std::to_string(device)
                                                            : std::string("memloom-host");
  const int raw = ::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (raw < 0) raise_allocation_error("memfd_create", errno, size);
  FdCloser fd(raw);
  if (::ftruncate(raw, static_cast<off_t>(size)) != 0)
    raise_allocation_error("ftruncate", errno, size);
  // Commit the pages now, as device memory is committed at allocation: running out of memory then
  // fails here with kOutOfMemory rather than with SIGBUS at the first touch of a sparse page.
  const int error = ::posix_fallocate(raw, 0, static_cast<off_t>(size));
  if (error != 0) raise_allocation_error("committing memory", error, size);
  if (::fcntl(raw, F_ADD_SEALS, kRequiredSeals) != 0) raise_errno("sealing a memfd", errno);
  return std::make_unique<MemfdSegment>(fd.release(), kind, device, size, std::move(charge));
}

MemfdSegment::~MemfdSegment() {
  ::close(fd_);
}

std::vector<uint8_t> SegmentDescriptor::encode() const {
  WireDescriptor wire{};
  wire.magic = kDescriptorMagic;
  wire.version = kDescriptorVersion;
  wire.kind = static_cast<uint8_t>(kind);
  wire.device = device;
  wire.size = size;
  std::vector<uint8_t> bytes(sizeof(wire));
  std::memcpy(bytes.data(), &wire, sizeof(wire));
  return bytes;
}

SegmentDescriptor SegmentDescriptor::decode(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(WireDescriptor)) {
    raise(Status::kInvalidInput,
          "not an emulated segment descriptor: " + std::to_string(bytes.size()) +
              " bytes, expected " + std::to_string(sizeof(WireDescriptor)));
  }
  WireDescriptor wire{};
  std::memcpy(&wire, bytes.data(), sizeof(wire));
  if (wire.magic != kDescriptorMagic) {
    raise(Status::kInvalidInput, "not an emulated segment descriptor (bad magic)");
  }
  if (wire.version != kDescriptorVersion) {
    raise(Status::kInvalidInput, "emulated segment descriptor version " +
                                     std::to_string(wire.version) + ", this build reads " +
                                     std::to_string(kDescriptorVersion));
  }
  const auto kind = static_cast<hal::MemoryKind>(wire.kind);
  const bool device_ok = kind == hal::MemoryKind::kDevice ? wire.device >= 0
                         : kind == hal::MemoryKind::kHost ? wire.device == -1
                                                          : false;
  if (!device_ok || wire.reserved != 0 || wire.size == 0) {
    raise(Status::kInvalidInput,
          "corrupt emulated segment descriptor (kind " + std::to_string(wire.kind) + ", device " +
              std::to_string(wire.device) + ", size " + std::to_string(wire.size) + ")");
  }
  return SegmentDescriptor{kind, wire.device, wire.size};
}

void check_segment_fd(int fd, size_t size) {
  struct stat info {};
  if (fd < 0 || ::fstat(fd, &info) != 0) {
    raise(Status::kInvalidInput,
          "imported segment has no valid file descriptor (fd " + std::to_string(fd) + ")");
  }
  if (!S_ISREG(info.st_mode) || static_cast<uint64_t>(info.st_size) != size) {
    raise(Status::kInvalidInput, "the descriptor says " + format_bytes(size) +
                                     " but the file descriptor holds " +
                                     std::to_string(info.st_size) + " bytes");
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kRequiredSeals) != kRequiredSeals) {
    raise(Status::kInvalidInput, "the imported file descriptor is not a sealed memloom segment");
  }
}

}  // namespace memloom::emulated
