// A copy for ranges larger than the caches: the destination is written with non-temporal
// stores, which skip reading each destination line into the cache before overwriting it (a third
// of the memory traffic of a cached copy). glibc's memcpy does this by itself only above a
// threshold near the size of the last-level cache, so the 1 MiB pieces that TwoThreadCopier's
// threads copy would otherwise go through the cache.
#pragma once

#include <cstddef>

namespace memloom::base {

// Copies `bytes` from `src` to `dst` (the ranges must not overlap). The stores are ordered before
// the function returns (a store fence), so another thread or process synchronising with the caller
// afterwards sees them. Falls back to memcpy where non-temporal stores are not available.
void streaming_copy(void* dst, const void* src, size_t bytes);

}  // namespace memloom::base
