#include "hw/emulated/va_reservation.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "hw/emulated/memfd_segment.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::emulated {
namespace {

constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

using base::hex;  // addresses here are never null, so it prints what "%p" printed

// Turns [address, address+size) of a reservation back into inaccessible, unbacked memory.
void make_inaccessible(void* address, size_t size) {
  void* result = ::mmap(address, size, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
  if (result == MAP_FAILED) raise_errno("restoring a reservation at " + hex(address), errno);
}

}  // namespace

void* reserve_address_range(size_t size, size_t alignment, void* fixed_address) {
  if (fixed_address != nullptr) {
    if (reinterpret_cast<uintptr_t>(fixed_address) % alignment != 0) {
      raise(Status::kInvalidInput, "fixed address " + hex(fixed_address) +
                                       " is not aligned to the granularity " +
                                       format_bytes(alignment));
    }
    void* got = ::mmap(fixed_address, size, PROT_NONE, kReserveFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {
      const int error = errno;
      if (error == EEXIST || error == EINVAL || error == ENOMEM || error == EPERM) {
        raise(Status::kNotSupported, "cannot reserve " + format_bytes(size) + " at " +
                                         hex(fixed_address) + ": " + std::strerror(error));
      }
      raise_errno("reserving address space at " + hex(fixed_address), error);
    }
    if (got != fixed_address) {  // kernels before 4.17 treat the flag as a mere hint
      ::munmap(got, size);
      raise(Status::kNotSupported, "cannot reserve " + format_bytes(size) + " at " +
                                       hex(fixed_address) + ": the range is in use");
    }
    return got;
  }
  // Over-reserve by the alignment and trim both ends, so the start lands on a boundary.
  const size_t padded = size + alignment;
  if (padded < size)
    raise(Status::kInvalidInput, "reservation size " + std::to_string(size) + " overflows");
  void* raw = ::mmap(nullptr, padded, PROT_NONE, kReserveFlags, -1, 0);
  if (raw == MAP_FAILED)
    raise_errno("reserving " + format_bytes(size) + " of address space", errno);
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t tail = aligned + size;
  if (start + padded > tail) ::munmap(reinterpret_cast<void*>(tail), start + padded - tail);
  return reinterpret_cast<void*>(aligned);
}

VaReservation::~VaReservation() {
  // One munmap drops the segment mappings and the reservation alike.
  if (::munmap(base_, size_) != 0) {
    MEMLOOM_LOG(kError,
                "munmap of a VA range at " << hex(base_) << " failed: " << std::strerror(errno));
  }
}

void VaReservation::map(size_t offset, const hal::Segment& segment) {
  const auto* memfd = dynamic_cast<const MemfdSegment*>(&segment);
  MEMLOOM_CHECK_ARG(memfd != nullptr, "VaRange::map: the segment belongs to another backend");
  const size_t size = memfd->size();
  if (offset % granularity_ != 0) {
    raise(Status::kInvalidInput, "VaRange::map: offset " + std::to_string(offset) +
                                     " is not a multiple of the granularity " +
                                     format_bytes(granularity_));
  }
  if (offset > size_ || size > size_ - offset) {
    raise(Status::kInvalidInput, "VaRange::map: " + format_bytes(size) + " at offset " +
                                     std::to_string(offset) + " does not fit in the range of " +
                                     format_bytes(size_));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto next = mappings_.lower_bound(offset);
  const bool hits_next = next != mappings_.end() && next->first < offset + size;
  const bool hits_previous =
      next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.size > offset;
  if (hits_next || hits_previous) {
    const auto& other = hits_next ? *next : *std::prev(next);
    raise(Status::kInvalidInput, "VaRange::map: [" + std::to_string(offset) + ", +" +
                                     std::to_string(size) + ") overlaps the mapping at offset " +
                                     std::to_string(other.first) + " (+" +
                                     std::to_string(other.second.size) + ")");
  }
  void* address = base_ + offset;
  void* got = ::mmap(address, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd->fd(), 0);
  if (got == MAP_FAILED) {
    const int error = errno;
    make_inaccessible(address, size);  // a failed MAP_FIXED may have left the range unmapped
    raise_errno("mapping a segment at " + hex(address), error);
  }
  mappings_.emplace(offset, Mapping{size, memfd->charge()});
}

void VaReservation::unmap(size_t offset, size_t size) {
  if (size == 0 || offset > size_ || size > size_ - offset) {
    raise(Status::kInvalidInput, "VaRange::unmap: [" + std::to_string(offset) + ", +" +
                                     std::to_string(size) + ") is not inside the range of " +
                                     format_bytes(size_));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto first = mappings_.lower_bound(offset);
  if (first != mappings_.begin() &&
      std::prev(first)->first + std::prev(first)->second.size > offset) {
    raise(Status::kInvalidInput, "VaRange::unmap: offset " + std::to_string(offset) +
                                     " is inside the mapping at offset " +
                                     std::to_string(std::prev(first)->first));
  }
  auto last = first;
  while (last != mappings_.end() && last->first < offset + size) {
    if (last->first + last->second.size > offset + size) {
      raise(Status::kInvalidInput, "VaRange::unmap: the range ends inside the mapping at offset " +
                                       std::to_string(last->first));
    }
    ++last;
  }
  if (first == last) {
    raise(Status::kInvalidInput, "VaRange::unmap: nothing is mapped in [" + std::to_string(offset) +
                                     ", +" + std::to_string(size) + ")");
  }
  for (auto it = first; it != last; ++it) make_inaccessible(base_ + it->first, it->second.size);
  mappings_.erase(first, last);
}

}  // namespace memloom::emulated
