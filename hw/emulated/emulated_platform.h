// The emulated backend's factory. The core opens the backend through memloom_create_platform
// (hal::kCreatePlatformSymbol), as it opens the CUDA module; tests may call these directly.
// Devices, capacities and node identity come from the environment (MEMLOOM_EMU_DEVICES,
// MEMLOOM_EMU_DEVICE_MEM, MEMLOOM_EMU_CPU_THREADS, MEMLOOM_EMU_GRANULARITY, MEMLOOM_NODE).
#pragma once

#include <cstddef>
#include <memory>

#include "hw/hal/platform.h"

namespace memloom::emulated {

struct EmulatedOptions {
  int devices = 8;                       // MEMLOOM_EMU_DEVICES
  size_t device_capacity = 16ull << 30;  // MEMLOOM_EMU_DEVICE_MEM (bytes; K/M/G suffixes allowed)
  int cpu_threads = 0;                   // MEMLOOM_EMU_CPU_THREADS: kernel threads shared by all
                                         // streams of the process (0: hardware threads)
  size_t granularity = 4096;             // MEMLOOM_EMU_GRANULARITY (e.g. 2M mimics CUDA VMM)
  int start_delay_ms = 0;  // MEMLOOM_EMU_START_DELAY_MS: the start takes this long, as a CUDA
                           // context among busy GPU processes can (tests of slow starts)
  static EmulatedOptions from_environment();
};

std::unique_ptr<hal::Platform> create_platform(const EmulatedOptions& options);
// The UCX transport (a Platform's create_transport, without a platform). No staging: all of this
// backend's memory is host memory.
std::unique_ptr<hal::Transport> create_transport(const hal::TransportOptions& options = {});

}  // namespace memloom::emulated
