// Where the GPU time of an operation goes, for memloom-bench-gpu's breakdowns: with
// MEMLOOM_CUDA_PHASE_TIMES=1 in the environment (read once), every kernel launch and copy the
// backend enqueues, and the steps inside its multi-kernel runners (the grouping's sort, encode,
// scan), is bracketed by a pair of timing events; memloom_cuda_phase_times() (this module's C
// symbol, found by dlsym) waits for them and returns the seconds per phase name. Unset, a launch
// pays one test of a static flag.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace memloom::cuda {

bool phase_times_enabled();

// Times the work enqueued on `stream` during its lifetime under `name` (a static string; a step
// inside a phase is named "<phase>.<step>"). Does nothing unless phase_times_enabled().
class PhaseTimer {
 public:
  PhaseTimer(const char* name, cudaStream_t stream);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* name_ = nullptr;  // null: not timing
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
};

}  // namespace memloom::cuda

// Waits for every bracket recorded since the last call and writes one line per phase name,
// "<name>\t<seconds>\t<count>\n", the sums over those brackets, into `text` (NUL-terminated,
// truncated to `capacity`). Returns the length of the full text; -1 when timing is off.
extern "C" long memloom_cuda_phase_times(char* text, size_t capacity);
