// Host memory from smem_trans_malloc: a memfd mapped here and shareable by fd, so that peers on
// the node map it and copy with plain memcpy. Nothing appears in /dev/shm or on disk.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "src/smem/trans/socket_io.h"

namespace memloom::smem::trans {

class ShareableHostMemory {
 public:
  // Backs all `bytes` with memory up front (fallocate), so running out of memory is an error
  // here (kOutOfMemory) and not a SIGBUS later.
  static std::unique_ptr<ShareableHostMemory> allocate(size_t bytes);
  ~ShareableHostMemory();
  ShareableHostMemory(const ShareableHostMemory&) = delete;
  ShareableHostMemory& operator=(const ShareableHostMemory&) = delete;

  void* base() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_.get(); }

 private:
  ShareableHostMemory() = default;
  UniqueFd fd_;
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace memloom::smem::trans
