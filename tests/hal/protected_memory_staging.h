// A BufferStaging for checking, without a GPU, that a transport stages memory the CPU cannot touch
// (the CUDA backend's device memory): its "device memory" is a PROT_NONE mapping that only its
// copy() opens, for the duration of the copy. A transport that handed such memory to a socket or to
// UCX, or touched it itself, fails (EFAULT) or faults the process. It counts what tests bound: the
// largest single copy, the waits for copies, the host bytes allocated and the frees.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "hw/host/buffer_staging.h"

namespace memloom::test {

class ProtectedMemoryStaging : public host::BufferStaging {
 public:
  explicit ProtectedMemoryStaging(size_t bytes) : bytes_(bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) std::abort();
    memory_ = static_cast<std::byte*>(memory);
  }
  ~ProtectedMemoryStaging() override { ::munmap(memory_, bytes_); }

  std::byte* device() const { return memory_; }
  uint64_t device_address(size_t offset) const {
    return reinterpret_cast<uint64_t>(memory_ + offset);
  }

  bool needs_staging(const void* pointer) const override {
    auto* p = static_cast<const std::byte*>(pointer);
    return p >= memory_ && p < memory_ + bytes_;
  }
  void copy(void* to, const void* from, size_t bytes, Deadline) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_NE(needs_staging(to), needs_staging(from)) << "a copy must cross host and device";
    largest_copy_ = std::max(largest_copy_, bytes);
    ++waits_;
    open_for_copy([&] { std::memcpy(to, from, bytes); });
  }
  void copy_all(const std::vector<host::StagingCopy>& copies, Deadline) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++waits_;
    open_for_copy([&] {
      for (const host::StagingCopy& c : copies) {
        EXPECT_NE(needs_staging(c.to), needs_staging(c.from))
            << "a copy must cross host and device";
        largest_copy_ = std::max(largest_copy_, c.bytes);
        std::memcpy(c.to, c.from, c.bytes);
      }
    });
  }
  void* allocate_host(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    host_bytes_ += bytes;
    return std::malloc(bytes);
  }
  // As the CUDA staging's page-locked memory: the pool must allocate it up front.
  bool allocation_waits_for_device() const override { return true; }
  void free_host(void* buffer) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++host_frees_;
    std::free(buffer);
  }

  // What the test itself writes or reads of the "device" memory.
  void fill(size_t offset, const std::vector<std::byte>& data) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_for_copy([&] { std::memcpy(memory_ + offset, data.data(), data.size()); });
  }
  std::vector<std::byte> peek(size_t offset, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::byte> out(bytes);
    open_for_copy([&] { std::memcpy(out.data(), memory_ + offset, bytes); });
    return out;
  }
  size_t largest_copy() {
    std::lock_guard<std::mutex> lock(mutex_);
    return largest_copy_;
  }
  // How many times a caller waited for copies (copy or copy_all calls).
  size_t waits() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waits_;
  }
  size_t host_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return host_bytes_;
  }
  size_t host_frees() {
    std::lock_guard<std::mutex> lock(mutex_);
    return host_frees_;
  }

 private:
  template <typename Copy>
  void open_for_copy(Copy&& copy) {
    ASSERT_EQ(::mprotect(memory_, bytes_, PROT_READ | PROT_WRITE), 0);
    copy();
    ASSERT_EQ(::mprotect(memory_, bytes_, PROT_NONE), 0);
  }

  const size_t bytes_;
  std::byte* memory_ = nullptr;
  std::mutex mutex_;
  size_t largest_copy_ = 0;
  size_t waits_ = 0;
  size_t host_bytes_ = 0;
  size_t host_frees_ = 0;
};

inline std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::vector<std::byte> out(n);
  std::mt19937 random(seed);
  for (auto& b : out) b = static_cast<std::byte>(random());
  return out;
}

}  // namespace memloom::test
