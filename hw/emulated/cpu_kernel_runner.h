// Maps hw/hal/kernels.h's KernelId table to CPU runners of the single-source kernel bodies in
// src/kernels/: the emulated counterpart of launching a CUDA grid over the same body.
#pragma once

#include <cstddef>

#include "hw/hal/kernels.h"
#include "src/base/thread_pool.h"

namespace memloom::emulated {

using base::ThreadPool;  // the pool kernels and stream copies run on

struct CpuKernel {
  const char* name;
  size_t args_size;  // sizeof the kernel's Args; a launch must pass exactly this many bytes
  size_t
      min_chunk;  // items per chunk below which splitting across threads costs more than it saves
  void (*run_range)(const void* args, size_t begin, size_t end);
};

// The runner of `id`; throws kInvalidInput for an id outside the table.
const CpuKernel& cpu_kernel(hal::KernelId id);

// Runs the kernel body over [0, work_items) on the pool (and the calling thread).
void run_cpu_kernel(ThreadPool& pool, const CpuKernel& kernel, const void* args, size_t work_items);

}  // namespace memloom::emulated
