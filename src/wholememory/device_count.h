// fork_get_device_count's work: asking a forked child for the backend's device count, so the
// calling process initialises no backend (a CUDA context must not exist before a later fork).
#pragma once

#include <chrono>

namespace memloom::wholememory {

// Throws kSystem if the child cannot be started, kTimeout if it does not answer in time.
int device_count_in_child(std::chrono::milliseconds timeout);

}  // namespace memloom::wholememory
