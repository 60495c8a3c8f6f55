// Atomic read-modify-write operations for kernel bodies (MEMLOOM_HOST_DEVICE): CUDA's atomics on
// the GPU, the compiler's __atomic builtins on CPU threads. All relaxed: kernels use them for
// counters and minima/maxima that the host reads after the stream has finished.
#pragma once

#include <cstdint>

#include "src/kernels/host_device.h"

namespace memloom::kernels {

// Adds `value` to *counter; returns the value before.
MEMLOOM_HOST_DEVICE inline unsigned long long atomic_fetch_add(unsigned long long* counter,
                                                               unsigned long long value) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(counter, value);
#else
  return __atomic_fetch_add(counter, value, __ATOMIC_RELAXED);
#endif
}

#if !defined(__CUDA_ARCH__)
// CPU threads: stores `value` while `replaces(value, current)` holds, by compare-and-swap.
template <typename Replaces>
inline void store_while(unsigned long long* slot, unsigned long long value, Replaces replaces) {
  unsigned long long seen = __atomic_load_n(slot, __ATOMIC_RELAXED);
  while (
      replaces(value, seen) &&
      !__atomic_compare_exchange_n(slot, &seen, value, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
#endif

// *slot = min(*slot, value).
MEMLOOM_HOST_DEVICE inline void atomic_min(unsigned long long* slot, unsigned long long value) {
#if defined(__CUDA_ARCH__)
  atomicMin(slot, value);
#else
  store_while(slot, value, [](unsigned long long v, unsigned long long seen) { return v < seen; });
#endif
}

// *slot = max(*slot, value).
MEMLOOM_HOST_DEVICE inline void atomic_max(unsigned long long* slot, unsigned long long value) {
#if defined(__CUDA_ARCH__)
  atomicMax(slot, value);
#else
  store_while(slot, value, [](unsigned long long v, unsigned long long seen) { return v > seen; });
#endif
}

// Adds 1 to *counter and returns the value before, for counters that many threads increment at
// once (a few per-rank buckets for a million rows). On a GPU the lanes of a warp that name the
// same counter take one atomic together: the lowest adds the group's size and each lane gets the
// value before plus its rank in the group, so a warp costs one atomic per distinct counter
// instead of 32 serialised ones on the same address. CPU threads add one each (the CPU runners
// batch per range instead).
MEMLOOM_HOST_DEVICE inline unsigned long long atomic_increment(unsigned long long* counter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  // The lanes that reach this call together (any lane may have left the loop or skipped its row).
  const unsigned active = __activemask();
  const unsigned same = __match_any_sync(active, reinterpret_cast<unsigned long long>(counter));
  const unsigned lane = threadIdx.x % 32;
  const int leader = __ffs(static_cast<int>(same)) - 1;
  unsigned long long before = 0;
  if (static_cast<int>(lane) == leader)
    before = atomicAdd(counter, static_cast<unsigned long long>(__popc(same)));
  before = __shfl_sync(same, before, leader);
  return before + static_cast<unsigned>(__popc(same & ((1u << lane) - 1u)));
#else
  return atomic_fetch_add(counter, 1);
#endif
}

}  // namespace memloom::kernels
