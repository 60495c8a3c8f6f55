// Device memory blocks for the default environment functions, kept for reuse after they are
// freed. Operations that exchange rows ask for large temporary buffers on every call; a fresh
// allocation costs a backend allocation and mapping (and on the emulated backend, first-touch page
// faults over the whole buffer), so freed blocks are kept (up to 2 GiB, and a quarter of the
// device's capacity; the least recently given back leave first) and handed out again.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/hal/memory_domain.h"

namespace memloom::wholememory {

struct DeviceBlock {
  std::unique_ptr<hal::Segment> segment;
  void* pointer = nullptr;
  size_t bytes = 0;  // the mapped size (a multiple of the domain's granularity)
  int device = 0;
};

class DeviceBlockCache {
 public:
  static DeviceBlockCache& instance();

  // A block of at least `bytes` on `device`: a kept one when one fits without wasting more than
  // its size again, else a new one (dropping the kept blocks and retrying once when the device is
  // out of memory).
  DeviceBlock take(size_t bytes, int device);
  // Keeps the block for reuse; when the cache is then over its limits, the blocks given back
  // longest ago are released (a block over the byte limit by itself is released at once).
  void give(DeviceBlock block);
  // At most this many blocks are kept: a gather and a scatter of an exchanging table use about a
  // dozen buffers each, and training loops alternate them.
  static constexpr size_t kMaxKeptBlocks = 64;

 private:
  DeviceBlockCache() = default;
  static void release(DeviceBlock& block);
  // A child forked from a process with kept blocks must not hand out memory its parent uses.
  void forget_if_forked();
  std::vector<DeviceBlock> drain();

  std::mutex mutex_;
  pid_t owner_pid_ = 0;
  std::vector<DeviceBlock>* kept_ = nullptr;
  size_t kept_bytes_ = 0;
};

}  // namespace memloom::wholememory
