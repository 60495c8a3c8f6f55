#include "hw/emulated/memfd_memory_domain.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "hw/emulated/memfd_segment.h"
#include "hw/emulated/va_reservation.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/base/unique_fd.h"

namespace memloom::emulated {
namespace {

using base::hex;

const MemfdSegment& ours(const hal::Segment& segment, const char* operation) {
  const auto* memfd = dynamic_cast<const MemfdSegment*>(&segment);
  if (memfd == nullptr) {
    raise(Status::kInvalidInput,
          std::string(operation) + ": the segment belongs to another backend");
  }
  return *memfd;
}

}  // namespace

MemfdMemoryDomain::MemfdMemoryDomain(int devices, size_t device_capacity, size_t granularity)
    : granularity_(granularity),
      budget_(std::make_shared<DeviceBudget>(devices, device_capacity)) {}

MemfdMemoryDomain::~MemfdMemoryDomain() {
  for (const auto& [address, mapping] : anywhere_) {
    ::munmap(reinterpret_cast<void*>(address), mapping.size);
  }
}

size_t MemfdMemoryDomain::granularity(hal::MemoryKind) const {
  return granularity_;
}

void MemfdMemoryDomain::check_multiple(const char* what, size_t value) const {
  if (value == 0 || value % granularity_ != 0) {
    raise(Status::kInvalidInput, std::string(what) + " " + std::to_string(value) +
                                     " is not a positive multiple of the granularity " +
                                     format_bytes(granularity_));
  }
}

std::unique_ptr<hal::Segment> MemfdMemoryDomain::allocate(hal::MemoryKind kind, int device,
                                                          size_t size) {
  check_multiple("allocation size", size);
  if (kind == hal::MemoryKind::kHost) return MemfdSegment::create(kind, -1, size, nullptr);
  if (kind != hal::MemoryKind::kDevice) {
    raise(Status::kInvalidInput, "unknown memory kind " + std::to_string(static_cast<int>(kind)));
  }
  if (device < 0 || device >= budget_->devices()) {
    raise(Status::kInvalidInput, "device " + std::to_string(device) + " does not exist (" +
                                     std::to_string(budget_->devices()) + " emulated devices)");
  }
  auto charge = budget_->charge(device, size);
  return MemfdSegment::create(kind, device, size, std::move(charge));
}

hal::ExportedSegment MemfdMemoryDomain::export_segment(const hal::Segment& segment) {
  const MemfdSegment& memfd = ours(segment, "export_segment");
  hal::ExportedSegment exported;
  exported.descriptor = SegmentDescriptor{memfd.kind(), memfd.device(), memfd.size()}.encode();
  exported.fd = ::fcntl(memfd.fd(), F_DUPFD_CLOEXEC, 0);
  if (exported.fd < 0) raise_errno("duplicating a segment's fd for export", errno);
  return exported;
}

std::unique_ptr<hal::Segment> MemfdMemoryDomain::import_segment(hal::ExportedSegment exported) {
  // We own exported.fd from here on, whether the import succeeds or not.
  base::UniqueFd owned(exported.fd);
  const SegmentDescriptor descriptor = SegmentDescriptor::decode(exported.descriptor);
  if (descriptor.size % granularity_ != 0) {
    raise(Status::kInvalidInput, "imported segment of " + format_bytes(descriptor.size) +
                                     " is not a multiple of this process's granularity " +
                                     format_bytes(granularity_) +
                                     " (MEMLOOM_EMU_GRANULARITY must agree across processes)");
  }
  check_segment_fd(owned.get(), descriptor.size);
  auto segment = std::make_unique<MemfdSegment>(owned.get(), descriptor.kind, descriptor.device,
                                                descriptor.size, nullptr);
  owned.release();  // the segment owns it now
  return segment;
}

std::unique_ptr<hal::VaRange> MemfdMemoryDomain::reserve(size_t size, void* fixed_address) {
  check_multiple("reservation size", size);
  void* base = reserve_address_range(size, granularity_, fixed_address);
  return std::make_unique<VaReservation>(base, size, granularity_);
}

void* MemfdMemoryDomain::map_anywhere(const hal::Segment& segment) {
  const MemfdSegment& memfd = ours(segment, "map_anywhere");
  // Reserve first so the mapping is aligned to the granularity like every other mapping.
  void* address = reserve_address_range(memfd.size(), granularity_, nullptr);
  void* got =
      ::mmap(address, memfd.size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd.fd(), 0);
  if (got == MAP_FAILED) {
    const int error = errno;
    ::munmap(address, memfd.size());
    raise_errno("mapping a segment of " + format_bytes(memfd.size()), error);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Fresh address space from the kernel cannot overlap a live mapping.
  anywhere_.insert(reinterpret_cast<uintptr_t>(got), memfd.size(), memfd.charge());
  return got;
}

void MemfdMemoryDomain::unmap_anywhere(void* address, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  anywhere_.expect(address, size);
  const auto start = reinterpret_cast<uintptr_t>(address);
  if (::munmap(address, size) != 0) raise_errno("unmapping a segment at " + hex(start), errno);
  anywhere_.erase(start);
}

// The emulated copy engines reach all of the process's memory, so registration only validates and
// records the range, keeping the rules the CUDA backend's pinning imposes.
void MemfdMemoryDomain::register_user_memory(void* address, size_t size) {
  const uintptr_t start = Registrations::check_range(address, size);
  // msync fails with ENOMEM when part of the range is not mapped, as pinning would fail on CUDA.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first_page = start & ~(page - 1);
  if (::msync(reinterpret_cast<void*>(first_page), start + size - first_page, MS_ASYNC) != 0) {
    raise(Status::kInvalidInput, "register_user_memory: [" + hex(start) + ", +" +
                                     std::to_string(size) + ") is not mapped memory");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!registered_.already_registered(start, size)) registered_.insert(start, size);
}

void MemfdMemoryDomain::unregister_user_memory(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  registered_.erase(registered_.expect_start(address).start);
}

}  // namespace memloom::emulated
