// Copies that work between any two addresses the backend reaches (device memory included, so no
// code here assumes the CPU can touch WholeMemory directly) and return when the bytes have landed.
#pragma once

#include <cstddef>
#include <memory>

#include "hw/hal/stream.h"

namespace memloom::wholememory {

class BlockingCopier {
 public:
  explicit BlockingCopier(int device);
  ~BlockingCopier();
  void copy(void* dst, const void* src, size_t bytes);

 private:
  std::unique_ptr<hal::Stream> stream_;
};

}  // namespace memloom::wholememory
