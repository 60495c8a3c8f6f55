// Host buffers of BufferStaging::allocate_host, kept for reuse by the UCX transport's staged
// messages: on CUDA they are page-locked, and pinning costs far more than a copy through the
// buffer, so a message borrows one instead of allocating its own.
//
// All of them are allocated when the pool is made, and none is freed before the pool goes: on CUDA
// a page-locked allocation or free synchronizes with the device, and transfers run inside stream
// host functions (BM's asynchronous copies), whose stream cannot go on until the transfer returns,
// so an allocation there could wait for itself. A lease that finds none free, or asks for more than
// a pool buffer, gets plain host memory for itself instead (slower device copies, no such wait).
//
// A lease keeps the pool alive (shared_ptr): a UCX request may release its message's buffer after
// the transport that sent it began to close.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/host/buffer_staging.h"

namespace memloom::host {

// A piece of a UCX message's iov list in memory the CPU cannot touch: UCX gets the message's
// pooled buffer at `offset` in its place, and the staging copies between the two (the UCX
// transport's requester, ucx_am_requests.h, and owner, ucx_am_server.h, alike).
struct StagedIovPart {
  size_t part;  // index into the message's iov list
  std::byte* device;
  size_t offset;  // in the message's pooled buffer
};

class StagingBufferPool : public std::enable_shared_from_this<StagingBufferPool> {
 public:
  // `staging` must outlive every lease. Allocates `count` buffers of `buffer_bytes` now.
  static std::shared_ptr<StagingBufferPool> create(BufferStaging& staging, size_t buffer_bytes,
                                                   size_t count);

  // A host buffer of at least `bytes`, back to the pool when destroyed; plain host memory of the
  // lease's own when no pool buffer is free or `bytes` is larger than one.
  class Lease {
   public:
    Lease() = default;
    ~Lease();
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    std::byte* data() const { return buffer_.data(); }

   private:
    friend class StagingBufferPool;
    std::shared_ptr<StagingBufferPool> pool_;
    StagingBuffer buffer_;
    bool pooled_ = false;
  };

  Lease lease(size_t bytes);
  BufferStaging& staging() const { return staging_; }
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  StagingBufferPool(BufferStaging& staging, size_t buffer_bytes)
      : staging_(staging), buffer_bytes_(buffer_bytes) {}
  void give_back(StagingBuffer buffer) noexcept;

  BufferStaging& staging_;
  const size_t buffer_bytes_;
  std::mutex mutex_;
  std::vector<StagingBuffer> free_;
};

}  // namespace memloom::host
