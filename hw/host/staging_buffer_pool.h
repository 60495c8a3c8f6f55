// Host buffers of BufferStaging::allocate_host, kept for reuse by the UCX transport's staged
// messages: on CUDA they are page-locked, and pinning costs far more than a copy through the
// buffer, so a message borrows one instead of allocating its own.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/host/buffer_staging.h"

namespace memloom::host {

class StagingBufferPool : public std::enable_shared_from_this<StagingBufferPool> {
 public:
  // Made by std::make_shared (leases keep it alive). `staging` must outlive every lease. Up to
  // `kept` free buffers of `buffer_bytes` are kept.
  StagingBufferPool(BufferStaging& staging, size_t buffer_bytes, size_t kept)
      : staging_(staging), buffer_bytes_(buffer_bytes), kept_(kept) {}
  ~StagingBufferPool();

  // A host buffer of at least `bytes`, back to the pool when the last copy of the lease goes (one
  // larger than the pool's buffers is freed then). A lease keeps the pool alive: a UCX request may
  // release its message's buffer after the transport that sent it began to close.
  using Lease = std::shared_ptr<std::byte>;
  Lease lease(size_t bytes);
  BufferStaging& staging() const { return staging_; }

 private:
  void give_back(std::byte* buffer) noexcept;

  BufferStaging& staging_;
  const size_t buffer_bytes_;
  const size_t kept_;
  std::mutex mutex_;
  std::vector<std::byte*> free_;
};

// The parts of a UCX message's iov list in memory the CPU cannot touch: UCX gets one leased buffer
// in their place, and the staging copies between the two (the UCX transport's requester,
// ucx_am_requests.h, and owner, ucx_am_server.h, alike).
class StagedParts {
 public:
  bool empty() const { return parts_.empty(); }
  // Entry `part` of the iov list, `bytes` at `device`: the entry gets no buffer until lease().
  void add(size_t part, std::byte* device, size_t bytes);
  // Leases one buffer of `pool` for every part and points their entries of `iov` into it.
  void lease(StagingBufferPool& pool, std::vector<ucp_dt_iov_t>& iov);
  // The copies between the parts' device memory and the leased buffer, into it or out of it.
  std::vector<StagingCopy> copies(bool into_buffer) const;
  void release() { buffer_.reset(); }

 private:
  struct Part {
    size_t part;
    std::byte* device;
    size_t offset;  // in the leased buffer
    size_t bytes;
  };
  std::vector<Part> parts_;
  size_t bytes_ = 0;
  StagingBufferPool::Lease buffer_;
};

}  // namespace memloom::host
