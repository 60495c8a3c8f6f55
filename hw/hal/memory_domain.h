// MemoryDomain: allocation, export/import and VA mapping of memory segments (after UCX's "md").
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memloom/error.h"

namespace memloom::hal {

enum class MemoryKind : uint8_t { kDevice = 0, kHost = 1 };

// What one process hands another so the other can map the same memory. `descriptor` is backend
// bytes (size, kind, device, ...); `fd` is a file descriptor where the OS needs one (-1 otherwise).
// The core moves the fd between processes (SCM_RIGHTS); the descriptor travels through the store.
struct ExportedSegment {
  std::vector<uint8_t> descriptor;
  int fd = -1;  // owned by this struct's holder; close it when done
};

// One physical allocation, device or host. Destroying it releases the memory once no mapping or
// importer still references it.
class Segment {
 public:
  virtual ~Segment() = default;
  virtual size_t size() const = 0;
  virtual MemoryKind kind() const = 0;
  virtual int device() const = 0;  // -1 for host memory
};

// A reserved, initially inaccessible range of virtual addresses into which segments are mapped at
// chosen offsets. Destroying it unmaps everything and releases the reservation.
class VaRange {
 public:
  virtual ~VaRange() = default;
  virtual void* base() const = 0;
  virtual size_t size() const = 0;
  // Maps all of `segment` at base()+offset. `offset` and the segment size must be multiples of the
  // domain's granularity. Access is granted to every device of this process.
  virtual void map(size_t offset, const Segment& segment) = 0;
  virtual void unmap(size_t offset, size_t size) = 0;
};

// Device memory of another process of the node, mapped into this one by import_device_range().
// Destroying it unmaps the memory here; the owner's memory itself is unaffected.
class ImportedRange {
 public:
  virtual ~ImportedRange() = default;
  // Where the exported range's first byte is mapped in this process: usable by this domain's
  // streams (not necessarily by the CPU).
  virtual void* address() const = 0;
  virtual size_t size() const = 0;
};

class MemoryDomain {
 public:
  virtual ~MemoryDomain() = default;

  // Sizes and offsets of segments and mappings must be multiples of this.
  virtual size_t granularity(MemoryKind kind) const = 0;

  // Throws kOutOfMemory when the device's (or host's) capacity is exhausted.
  virtual std::unique_ptr<Segment> allocate(MemoryKind kind, int device, size_t size) = 0;
  virtual ExportedSegment export_segment(const Segment& segment) = 0;
  // Takes ownership of exported.fd.
  virtual std::unique_ptr<Segment> import_segment(ExportedSegment exported) = 0;

  // Reserves `size` bytes of address space, aligned to the granularity. When `fixed_address` is not
  // null the range must start exactly there (throws kNotSupported if that is impossible), which is
  // how every rank gets the same base for a global virtual address space.
  virtual std::unique_ptr<VaRange> reserve(size_t size, void* fixed_address = nullptr) = 0;
  // reserve() for a range whose segments will be of `kind`. A backend that reserves address space
  // for device and host memory differently (CUDA: driver reservations vs plain ones) makes the
  // right kind at once, so that an address it cannot serve is refused here, where the caller can
  // still pick another one, and not at the first map().
  virtual std::unique_ptr<VaRange> reserve_for(MemoryKind kind, size_t size, void* fixed_address) {
    (void)kind;
    return reserve(size, fixed_address);
  }

  // A mapping of one whole segment at an address the domain picks (for CHUNKED-style access).
  virtual void* map_anywhere(const Segment& segment) = 0;
  virtual void unmap_anywhere(void* address, size_t size) = 0;

  // True when the CPU can load and store every address this domain's streams copy between
  // (mapped segments of either kind, registered user memory), so a synchronous copy may be a
  // plain memmove on the calling thread. False by default: device memory is not host-visible on
  // an accelerator.
  virtual bool memory_is_host_accessible() const { return false; }

  // True when `address` is device memory the CPU cannot load from or store to (so neither can
  // the kernel's cross-memory attach). False for host memory, and on backends whose every
  // address is host memory (the default).
  virtual bool is_device_memory(const void* address) const {
    (void)address;
    return false;
  }

  // Makes user memory usable by the backend's copy engines (pinning on CUDA). Idempotent per range.
  virtual void register_user_memory(void* address, size_t size) = 0;
  virtual void unregister_user_memory(void* address) = 0;

  // Lets another process of the node map [address, address+size) of this process's device memory
  // (memory this domain did not necessarily allocate: cudaMalloc'ed buffers too), so its streams
  // copy to and from it directly. std::nullopt when the range cannot be exported: host memory, a
  // range over several allocations, a backend without the feature (the default). Throws only
  // when the backend failed unexpectedly. The export stays valid while the memory is allocated.
  virtual std::optional<ExportedSegment> export_device_range(const void* address, size_t size) {
    (void)address;
    (void)size;
    return std::nullopt;
  }
  // Maps a range another process of the node exported. Takes ownership of exported.fd. Throws
  // kInvalidInput for a descriptor of another backend, kNotSupported where the backend cannot
  // import (the default), kDevice when the driver refuses.
  virtual std::unique_ptr<ImportedRange> import_device_range(ExportedSegment exported);
};

inline std::unique_ptr<ImportedRange> MemoryDomain::import_device_range(ExportedSegment exported) {
  if (exported.fd >= 0) ::close(exported.fd);
  raise(Status::kNotSupported, "this backend cannot import device memory of another process");
}

}  // namespace memloom::hal
