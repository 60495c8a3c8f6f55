// A counter-based random generator for kernel bodies: the value at (seed, key, position) is a
// hash of the three, with no state carried between calls. A sampler keys it by (seed, centre node,
// position), so every centre draws the same numbers whichever rank, thread or backend samples it.
// The mixing function is splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", 2014), applied once per input word.
#pragma once

#include <cstdint>

#include "src/kernels/host_device.h"

namespace memloom::kernels {

MEMLOOM_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

MEMLOOM_HOST_DEVICE inline uint64_t counter_random(uint64_t seed, uint64_t key, uint64_t position) {
  return mix64(mix64(mix64(seed) ^ key) ^ (position * 0xd1b54a32d192ed03ull));
}

// Uniform in (0, 1]: the top 53 bits, plus one, scaled; never 0, so its logarithm is finite.
MEMLOOM_HOST_DEVICE inline double uniform_open_closed(uint64_t bits) {
  return static_cast<double>((bits >> 11) + 1) * (1.0 / 9007199254740992.0);
}

}  // namespace memloom::kernels
