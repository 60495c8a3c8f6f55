// The CUDA backend's segments. Device memory is a CUDA VMM allocation (cuMemCreate) exportable as
// a POSIX file descriptor; host memory is a sealed Linux memfd, mapped where needed and pinned
// with cudaHostRegister so the GPUs reach it. Neither leaves a name anywhere on disk or in
// /dev/shm: peers get them only through the fd the core passes over a Unix socket.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hw/hal/memory_domain.h"

namespace memloom::cuda {

class DeviceSegment : public hal::Segment {
 public:
  // Adopts `handle` (one reference of the physical allocation).
  DeviceSegment(CUmemGenericAllocationHandle handle, int device, size_t size)
      : handle_(handle), device_(device), size_(size) {}
  ~DeviceSegment() override;
  DeviceSegment(const DeviceSegment&) = delete;
  DeviceSegment& operator=(const DeviceSegment&) = delete;

  size_t size() const override { return size_; }
  hal::MemoryKind kind() const override { return hal::MemoryKind::kDevice; }
  int device() const override { return device_; }
  CUmemGenericAllocationHandle handle() const { return handle_; }

 private:
  CUmemGenericAllocationHandle handle_;
  int device_;
  size_t size_;
};

class HostSegment : public hal::Segment {
 public:
  // Creates, sizes, commits (so exhaustion shows here, as kOutOfMemory) and seals a memfd.
  static std::unique_ptr<HostSegment> create(size_t size);
  // Adopts an imported memfd after checking that it is sealed at exactly `size` bytes.
  static std::unique_ptr<HostSegment> adopt(int fd, size_t size);
  ~HostSegment() override;
  HostSegment(const HostSegment&) = delete;
  HostSegment& operator=(const HostSegment&) = delete;

  size_t size() const override { return size_; }
  hal::MemoryKind kind() const override { return hal::MemoryKind::kHost; }
  int device() const override { return -1; }
  int fd() const { return fd_; }

 private:
  HostSegment(int fd, size_t size) : fd_(fd), size_(size) {}
  int fd_;
  size_t size_;
};

// Descriptor bytes of an exported CUDA segment: what the importer needs besides the fd.
struct SegmentDescriptor {
  hal::MemoryKind kind;
  int device;  // the exporter's device ordinal; -1 for host memory
  uint64_t size;

  std::vector<uint8_t> encode() const;
  // Throws kInvalidInput when the bytes are not a descriptor of this backend and version.
  static SegmentDescriptor decode(const std::vector<uint8_t>& bytes);
};

}  // namespace memloom::cuda
