// Helpers shared by the HAL conformance tests. They use only hw/hal/ interfaces and reach device
// memory only through stream copies and kernels, so the same tests run on the CUDA backend, where
// device memory is not readable from the host.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/hal/platform.h"
#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/kernels/fill_kernel.h"

namespace memloom::hal_test {

inline hal::Platform& platform() {
  return core::platform();
}
// Forked ranks call this first: they may inherit the test process's platform, opened before the
// fork (threads and accelerator contexts stay in the parent), and must open their own, configured
// by their environment.
inline hal::Platform& fresh_platform() {
  core::release_platform();
  return core::platform();
}
inline hal::MemoryDomain& domain() {
  return platform().memory_domain();
}
inline Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

// The smallest whole-granularity size holding `bytes`.
inline size_t round_up(size_t bytes, hal::MemoryKind kind = hal::MemoryKind::kDevice) {
  const size_t g = domain().granularity(kind);
  return (bytes + g - 1) / g * g;
}

// Runs `fn` and returns the Status of the memloom::Error it throws (kSuccess if none).
inline Status status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.status();
  }
  return Status::kSuccess;
}

#define EXPECT_STATUS(expected, statement) \
  EXPECT_EQ(::memloom::hal_test::status_of([&] { statement; }), (expected))

// Host memory registered with the domain for the lifetime of the object (a copy endpoint on every
// backend).
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes, uint8_t fill = 0) : bytes_(bytes == 0 ? 1 : bytes, fill) {
    domain().register_user_memory(bytes_.data(), bytes_.size());
  }
  ~HostBuffer() { domain().unregister_user_memory(bytes_.data()); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  uint8_t* data() { return bytes_.data(); }
  uint8_t& operator[](size_t i) { return bytes_[i]; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

// A segment with one whole mapping, unmapped on destruction.
struct MappedSegment {
  std::unique_ptr<hal::Segment> segment;
  uint8_t* address = nullptr;

  MappedSegment(hal::MemoryKind kind, size_t bytes, int device)
      : segment(domain().allocate(kind, device, round_up(bytes, kind))),
        address(static_cast<uint8_t*>(domain().map_anywhere(*segment))) {}
  // Device memory on the current device, or host memory.
  MappedSegment(hal::MemoryKind kind, size_t bytes)
      : MappedSegment(kind, bytes,
                      kind == hal::MemoryKind::kHost ? -1 : platform().current_device()) {}
  ~MappedSegment() { domain().unmap_anywhere(address, segment->size()); }
  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
};

inline void launch_fill(hal::Stream& stream, void* destination, size_t bytes, uint64_t seed) {
  kernels::FillPatternArgs args{static_cast<uint8_t*>(destination), seed};
  stream.launch(hal::KernelLaunch{hal::KernelId::kFillPattern, &args, sizeof(args), bytes});
}

// Copies `bytes` from `source` (any memory the stream reaches) into host memory and waits.
inline std::vector<uint8_t> read_back(hal::Stream& stream, const void* source, size_t bytes) {
  HostBuffer host(bytes);
  stream.copy(host.data(), source, bytes);
  stream.synchronize(soon());
  return std::vector<uint8_t>(host.data(), host.data() + bytes);
}

// The index of the first byte that differs from the fill pattern of `seed`, or -1.
inline long first_pattern_mismatch(const std::vector<uint8_t>& bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != kernels::fill_pattern_byte(seed, i)) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace memloom::hal_test
