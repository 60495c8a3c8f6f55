// The put/get part shared by `memloom-bench shm` and `bm`: the sizes, how a rank times its copies,
// and how the parent prints them against memcpy and OpenSHMEM putmem/getmem; and the part shared
// by `bm` and `trans` across emulated nodes: memcpy of the same bytes, timed in the same rounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

// --- Across emulated nodes against memcpy of the same bytes: issue #22 asks for this under
// UCX_TLS=sm,self, where no TCP is in play and a raw TCP stream is no reference ---

// "UCX transport, UCX_TLS=...": what carries data between nodes, with the user's UCX_TLS.
std::string across_nodes_transport();

// Issue #22's batch: 1024 pieces of 4 KiB. Where the pieces lie is each benchmark's own (so none
// merge into one contiguous transfer): piece i goes from offset from[i] to offset to[i] of
// buffers of kLargestCopy bytes.
inline constexpr uint32_t kBatchPieces = 1024;
inline constexpr size_t kBatchPieceBytes = 4096;
struct BatchOffsets {
  std::vector<size_t> from, to;
};

// Best seconds of memcpy, in this process, over the bytes an across-node round moves: "memcpy
// 67108864" (kLargestCopy at once), "memcpy batch" (the batch's pieces one after another, at its
// offsets) and "memcpy 8".
Figures memcpy_figures(const BatchOffsets& batch);

// Folds one round's figures into the best of the rounds so far: times at their lowest, speed-ups
// (figures named "... vs ...", as time_puts_and_gets names them) at their highest.
void keep_best_figures(Figures& best, const Figures& now);

// An across-node run's best seconds, each under its operation's name ("put", "write"; "" for
// BM's one kind of batch): per kLargestCopy copy, per batch, and per 8-byte copy (a round trip).
struct AcrossNodeSeconds {
  std::vector<std::pair<std::string, double>> largest, batches;
  std::pair<std::string, double> smallest;
};

// Prints each figure against memcpy_figures' (no targets: issue #22 sets none against memcpy),
// under a heading naming `api` ("bm", "trans").
void report_against_memcpy(const std::string& api, const AcrossNodeSeconds& ours,
                           const Figures& copies, VerdictTally& tally);

}  // namespace memloom::bench
