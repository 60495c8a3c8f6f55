// How host code reaches buffers the CPU cannot load and store: device buffers that the CUDA
// backend's host collectives and UCX transport move through host memory.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "memloom/deadline.h"

namespace memloom::host {

struct StagingCopy {
  void* to;
  const void* from;
  size_t bytes;
};

class BufferStaging {
 public:
  virtual ~BufferStaging() = default;
  // True when the CPU cannot touch `pointer` directly (device memory).
  virtual bool needs_staging(const void* pointer) const = 0;
  // Copies between host and device memory; throws kTimeout at the deadline.
  virtual void copy(void* to, const void* from, size_t bytes, Deadline deadline) {
    copy_all({StagingCopy{to, from, bytes}}, deadline);
  }
  // In order (a later one sees an earlier one's bytes), all done on return, with one wait.
  virtual void copy_all(const std::vector<StagingCopy>& copies, Deadline deadline) = 0;
  // Host memory that copy() moves at full speed (page-locked on CUDA).
  virtual void* allocate_host(size_t bytes) = 0;
  // Whether allocate_host or free_host may wait for the device (CUDA's page-locked memory does).
  virtual bool allocation_waits_for_device() const { return false; }
  virtual void free_host(void* buffer) noexcept = 0;
};

// Plain host memory and memcpy: where all memory is host memory, and a pool's leases that its
// buffers cannot serve.
class HostMemoryStaging : public BufferStaging {
 public:
  static constexpr std::align_val_t kAlignment{64};  // a cache line
  static void* allocate(size_t bytes) { return ::operator new(bytes, kAlignment); }
  static void free(void* buffer) noexcept { ::operator delete(buffer, kAlignment); }
  bool needs_staging(const void*) const override { return false; }
  void copy_all(const std::vector<StagingCopy>& copies, Deadline) override;
  void* allocate_host(size_t bytes) override { return allocate(bytes); }
  void free_host(void* buffer) noexcept override { free(buffer); }
};

// Host buffers of BufferStaging::allocate_host for the UCX transport's staged messages, kept: on
// CUDA they are page-locked, and pinning costs far more than a copy through the buffer. None is
// freed before the pool goes. Where an allocation may wait for the device, all are allocated with
// the pool, else each when first needed: on CUDA transfers run inside stream host functions (BM's
// asynchronous copies), so a page-locked allocation there, which synchronizes with the device,
// could wait for itself. A lease the pool cannot serve (all `count` leased, or more than a buffer)
// gets plain host memory of its own (slower device copies, no such wait).
class StagingBufferPool : public std::enable_shared_from_this<StagingBufferPool> {
 public:
  // Made by std::make_shared (leases keep it alive); `staging` must outlive every lease.
  StagingBufferPool(BufferStaging& staging, size_t buffer_bytes, size_t count);
  ~StagingBufferPool();

  // At least `bytes`, back to the pool when the last copy goes. Keeps the pool alive: a UCX request
  // may release its message's buffer after the transport that sent it began to close.
  using Lease = std::shared_ptr<std::byte>;
  Lease lease(size_t bytes);
  BufferStaging& staging() const { return staging_; }

 private:
  BufferStaging& staging_;
  const size_t buffer_bytes_;
  const size_t count_;
  std::mutex mutex_;
  std::vector<std::byte*> free_;
  size_t allocated_ = 0;  // buffers of this pool, free or leased
};

// The parts of a UCX message's iov list that go through one leased buffer: memory the CPU cannot
// touch (copied by the staging), and host memory packed with them (ucx_am_requests.h, "Packing").
class StagedParts {
 public:
  bool empty() const { return parts_.empty(); }
  // Entry `part` of the iov list, `bytes` at `memory`: no buffer until lease().
  void add(size_t part, std::byte* memory, size_t bytes, bool host = false) {
    parts_.push_back({part, memory, bytes_, bytes, host});
    bytes_ += bytes;
  }
  // Makes every entry of `iov` that has a buffer (host memory) a part.
  template <typename Iov>
  void pack_host(std::vector<Iov>& iov) {
    for (size_t i = 0; i < iov.size(); ++i) {
      if (iov[i].buffer == nullptr) continue;
      add(i, static_cast<std::byte*>(iov[i].buffer), iov[i].length, /*host=*/true);
      iov[i].buffer = nullptr;
    }
  }
  // Leases one buffer for every part and points their entries into it.
  template <typename Iov>
  void lease(StagingBufferPool& pool, std::vector<Iov>& iov) {
    buffer_ = pool.lease(bytes_);
    for (const Part& part : parts_) iov[part.part].buffer = buffer_.get() + part.offset;
  }
  // Copies the host parts into or out of the buffer by memcpy; returns the device parts' copies,
  // which only the staging can run.
  std::vector<StagingCopy> copy_host_parts(bool into_buffer) const;
  void release() { buffer_.reset(); }

 private:
  struct Part {
    size_t part;
    std::byte* device;
    size_t offset;  // in the leased buffer
    size_t bytes;
    bool host;
  };
  std::vector<Part> parts_;
  size_t bytes_ = 0;
  StagingBufferPool::Lease buffer_;
};

}  // namespace memloom::host
