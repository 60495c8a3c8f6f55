// The fill-pattern kernel (hw/hal/kernels.h: KernelId::kFillPattern): writes byte i of a buffer
// as a hash of (seed, i). Every byte depends on its whole index, so a test that reads the buffer
// back detects a missed, doubled, shifted or out-of-order chunk, whatever the buffer's size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/kernels/host_device.h"

namespace memloom::kernels {

struct FillPatternArgs {
  uint8_t* destination;  // work item i writes destination[i]
  uint64_t seed;
};

// The byte expected at index i: a 64-bit multiplicative hash (Fibonacci hashing) of seed + i.
MEMLOOM_HOST_DEVICE inline uint8_t fill_pattern_byte(uint64_t seed, uint64_t index) {
  uint64_t x = (seed + index + 1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x >> 24);
}

// A kernel is a type with Args and a per-item body; backends run body(args, i) for every i in
// [0, work_items) (CPU threads over chunks, or a CUDA grid-stride loop).
struct FillPatternKernel {
  using Args = FillPatternArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t index) {
    args.destination[index] = fill_pattern_byte(args.seed, index);
  }
};

}  // namespace memloom::kernels
