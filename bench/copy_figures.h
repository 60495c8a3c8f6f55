// The put/get part shared by `memloom-bench shm` and `bm`: the sizes, how a rank times its copies,
// and how the parent prints them against memcpy and OpenSHMEM putmem/getmem.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "bench/bench_ranks.h"
#include "bench/reference.h"

namespace memloom::bench {

inline constexpr size_t kCopySizes[] = {8, 4096, 1u << 20, 64u << 20};
inline constexpr size_t kLargestCopy = 64u << 20;

// Times put(bytes) and get(bytes) at every copy size, each paired with memcpy in the same
// process (bench_timing.h): figures "put BYTES", "get BYTES", "memcpy BYTES" (best seconds per
// copy) and "put BYTES vs memcpy", "get BYTES vs memcpy" (median paired speed-up).
Figures time_puts_and_gets(const std::function<void(size_t)>& put,
                           const std::function<void(size_t)>& get);

// OpenSHMEM putmem/getmem (PE 0 to PE 1) at every copy size and barrier_all with 2 PEs.
ReferenceRun run_openshmem_reference(int64_t barrier_iterations);

// Folds a second run of the same reference into `best`, keeping each figure's better time (a
// reference gets as many chances as memloom: runs before and after memloom's).
void keep_best(ReferenceRun& best, const ReferenceRun& other);

// Prints each copy figure against memcpy (the paired speed-up) and OpenSHMEM (best times), with
// the 64 MiB targets (>= 0.85 x memcpy and >= 1.5 x OpenSHMEM) unless `with_targets` is false
// (ratios only, for a data path the targets are not set for).
void report_copies(const std::string& api, const Figures& ours, const ReferenceRun& shmem,
                   VerdictTally& tally, bool with_targets = true);

// Bytes per second as GB/s for large copies, microseconds per copy for small ones.
struct CopyDisplay {
  double value;
  const char* unit;
};
CopyDisplay display_copy(size_t bytes, double seconds);

// A pattern written through an API and checked on the other side, so a benchmark cannot time
// copies that do not arrive.
inline constexpr size_t kVerifyBytes = 1u << 20;
void fill_pattern(void* data, size_t bytes, int seed);
void expect_pattern(const void* data, size_t bytes, int seed, const std::string& what);

}  // namespace memloom::bench
