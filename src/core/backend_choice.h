// Why the process's backend was chosen (platform_loader.cpp records it): for memloom-info.
#pragma once

#include <string>

namespace memloom::core {

// "MEMLOOM_BACKEND=emulated", or, when CUDA was tried and skipped, the real cause ("the cuda
// backend is unavailable: libcuda.so.1: cannot open shared object file ..."). "" before platform().
std::string backend_choice_reason();

}  // namespace memloom::core
