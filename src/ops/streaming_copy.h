// Copies that write around the caches (non-temporal stores), for the CPU backend's row kernels
// when what a launch writes is far larger than the caches. A plain copy first reads every
// destination line into the cache (read for ownership) and later writes it back: a third more
// memory traffic than the copy itself, and it evicts what the caches held (the page-table entries
// of a large table among it). memcpy does the same for large copies (glibc switches to
// non-temporal stores beyond its threshold), so a gather compared with it should too.
//
// CPU only: GPU code never includes this header (the kernels take it as their `Copy` functor).
#pragma once

#include <cstddef>

namespace memloom::ops {

using CopyFunction = void (*)(char* destination, const char* source, size_t bytes);

// The non-temporal copy for this CPU, chosen once: AVX2 stores where the CPU has them, else SSE2
// (AVX-512 stores were no faster on the EPYC machines measured, 0.67x against 0.75x of memcpy);
// memcpy on CPUs without non-temporal stores. Bytes before the destination's first 64-byte boundary
// and after its last one are copied plainly, so any addresses and sizes work.
CopyFunction streaming_copy_function();

// The copy with stores `width` bytes wide (32 or 16), or null where this CPU has none (tests
// check every width the machine has).
CopyFunction streaming_copy_of_width(int width);

// Orders the calling thread's non-temporal stores before its later stores (e.g. the release that
// tells other threads the rows are written): they are weakly ordered otherwise.
void streaming_stores_fence();

struct StreamingCopy {
  static constexpr bool kFetchesDestination = false;
  CopyFunction function = streaming_copy_function();
  void operator()(char* destination, const char* source, size_t bytes) const {
    function(destination, source, bytes);
  }
};

}  // namespace memloom::ops
