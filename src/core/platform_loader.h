// Chooses and opens the process's backend once: MEMLOOM_BACKEND=emulated|cuda, or by default the
// CUDA module when it loads and sees a GPU, else the emulated backend.
#pragma once

#include "hw/hal/platform.h"

namespace memloom::core {

// The process-wide platform, opened on first use. Throws if the requested backend cannot load.
hal::Platform& platform();
// Releases the platform (called by the APIs' finalize when nothing uses it any more).
void release_platform();

}  // namespace memloom::core
