// Host memory from smem_trans_malloc: a memfd mapped here and shareable by fd, so that peers on
// the node map it and copy with plain memcpy. Nothing appears in /dev/shm or on disk.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "src/base/unique_fd.h"

namespace memloom::smem::trans {

class ShareableHostMemory {
 public:
  // Reserves `bytes` lazily, as MemFabric's allocator does: a sparse memfd mapped without a swap
  // reservation, whose pages come into being when first touched, so an allocation larger than the
  // host's memory succeeds and only touching more than the host has fails (as any overcommitted
  // memory: SIGBUS or the OOM killer). kOutOfMemory when the address space cannot hold it.
  static std::unique_ptr<ShareableHostMemory> allocate(size_t bytes);
  ~ShareableHostMemory();
  ShareableHostMemory(const ShareableHostMemory&) = delete;
  ShareableHostMemory& operator=(const ShareableHostMemory&) = delete;

  void* base() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_.get(); }

 private:
  ShareableHostMemory() = default;
  base::UniqueFd fd_;
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memloom::smem::trans
