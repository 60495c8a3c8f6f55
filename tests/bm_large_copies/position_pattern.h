// A byte pattern that differs at every position (not periodic): a chunk copied to the wrong
// offset, or a chunk skipped, shows in a byte-exact comparison whatever the chunk size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memloom::testing {

inline std::vector<uint8_t> position_pattern(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> buffer(bytes);
  uint64_t word = 0;
  for (size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0) {
      // splitmix64 of (seed, word index)
      uint64_t z = seed * 0x9e3779b97f4a7c15ull + (i / 8) + 1;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      word = z ^ (z >> 31);
    }
    buffer[i] = static_cast<uint8_t>(word >> (8 * (i % 8)));
  }
  return buffer;
}

}  // namespace memloom::testing
