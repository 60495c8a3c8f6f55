// How memloom-bench times an operation, the same way for memloom and for the reference it is
// compared with: the fastest of several samples. The fastest, not the median, because on a shared
// machine other users' load only ever slows a sample down, so the fastest sample is the closest
// to what the code itself costs (bench/RESULTS.md notes the spread between runs).
#pragma once

#include <chrono>
#include <cstdint>

namespace memloom::bench {

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best seconds per call of op(): the count per sample doubles until a sample lasts at least
// sample_seconds (so the clock's own cost vanishes for tiny operations), then `samples` samples
// of that count are taken. op() runs once first (page faults, connections) and is not timed.
// Short samples, many of them: on a loaded machine a 5 ms sample often runs between two
// preemptions, a 20 ms one almost never does.
template <typename Op>
double best_seconds_per_op(Op&& op, int samples = 15, double sample_seconds = 0.005) {
  op();
  int64_t count = 1;
  double best = 1e30;
  for (int taken = 0; taken < samples;) {
    const double start = seconds_now();
    for (int64_t i = 0; i < count; ++i) op();
    const double elapsed = seconds_now() - start;
    if (elapsed < sample_seconds && count < (int64_t(1) << 30)) {
      count *= 2;  // still calibrating
      continue;
    }
    if (elapsed / static_cast<double>(count) < best) best = elapsed / static_cast<double>(count);
    ++taken;
  }
  return best;
}

// Rounds in which a figure and the reference it is compared with are timed in turn (each keeps
// its best round), so both see the same moments of the machine's load and get as many chances.
inline constexpr int kInterleavedRounds = 4;

// Best seconds per call over samples of exactly `iterations` calls each: for collectives, where
// every rank must make the same number of calls and so cannot calibrate on its own.
template <typename Op>
double best_seconds_fixed(Op&& op, int64_t iterations, int samples = 7) {
  for (int64_t i = 0; i < iterations / 10 + 1; ++i) op();  // warm-up
  double best = 1e30;
  for (int sample = 0; sample < samples; ++sample) {
    const double start = seconds_now();
    for (int64_t i = 0; i < iterations; ++i) op();
    const double elapsed = (seconds_now() - start) / static_cast<double>(iterations);
    if (elapsed < best) best = elapsed;
  }
  return best;
}

}  // namespace memloom::bench
