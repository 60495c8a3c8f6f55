// How memloom-bench times an operation, the same way for memloom and for the reference it is
// compared with. Two methods, both made for shared, loaded machines (bench/RESULTS.md notes the
// spread between runs):
//   - best_seconds_per_op / best_seconds_fixed: the fastest of several samples, for references
//     run in other processes (OpenSHMEM, Open MPI, raw TCP). The fastest, not the median, because
//     other users' load only ever slows a sample down;
//   - time_paired: a reference in the same process (memcpy, the same transfers one by one) timed
//     in samples adjacent to memloom's, and the median of the pairs' ratios.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

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

// How many calls make a sample of at least sample_seconds (op() runs once first, untimed).
template <typename Op>
int64_t calibrate_count(Op& op, double sample_seconds) {
  op();
  for (int64_t count = 1;; count *= 2) {
    const double start = seconds_now();
    for (int64_t i = 0; i < count; ++i) op();
    if (seconds_now() - start >= sample_seconds || count >= (int64_t(1) << 30)) return count;
  }
}

struct PairedTimes {
  double reference_seconds;  // best seconds per call of the reference
  double seconds;            // best seconds per call of the operation
  double speedup;            // median over the pairs of reference time / operation time
};

// A figure and the reference it is compared with (in the same process) timed in adjacent
// samples, `pairs` times, alternating which goes first. Each pair sees one moment of the
// machine's load, so the median of the pairs' ratios is far steadier than a ratio of two
// separately taken bests when other users' load comes and goes.
template <typename Reference, typename Op>
PairedTimes time_paired(Reference&& reference, Op&& op, int pairs = 51,
                        double sample_seconds = 0.005) {
  const int64_t reference_count = calibrate_count(reference, sample_seconds);
  const int64_t op_count = calibrate_count(op, sample_seconds);
  auto sample = [](auto& fn, int64_t count) {
    const double start = seconds_now();
    for (int64_t i = 0; i < count; ++i) fn();
    return (seconds_now() - start) / static_cast<double>(count);
  };
  PairedTimes times{1e30, 1e30, 0};
  std::vector<double> ratios;
  for (int pair = 0; pair < pairs; ++pair) {
    double reference_time = 0, op_time = 0;
    if (pair % 2 == 0) {
      reference_time = sample(reference, reference_count);
      op_time = sample(op, op_count);
    } else {
      op_time = sample(op, op_count);
      reference_time = sample(reference, reference_count);
    }
    times.reference_seconds = std::min(times.reference_seconds, reference_time);
    times.seconds = std::min(times.seconds, op_time);
    ratios.push_back(reference_time / op_time);
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  times.speedup = ratios[ratios.size() / 2];
  return times;
}

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
