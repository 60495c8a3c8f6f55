// The library's side of memloom/interrupt.h: what wait loops on a caller's thread use to ask the
// check the caller installed.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <mutex>
#include <string>

#include "memloom/deadline.h"

namespace memloom::base {

// How long a waiting poll() may sleep at most while a check is installed on this thread.
inline constexpr int kInterruptSliceMs = 100;

// Whether a check is installed on this thread (a thread-local load).
bool interrupt_check_installed();

// A poll timeout cap: cap_ms, or, while a check is installed, no later than the check is due.
int interruptible_slice_ms(int cap_ms);

// Called by wait loops on every turn. When a check is installed, asks it once kInterruptSliceMs
// have passed since the wait first looked (or since it last asked), and throws
// Error(Status::kInterrupted) when it answers nonzero. Without a check: one thread-local load.
void throw_if_interrupted();

// Waits until `until` in slices, asking the interrupt check between them (throw_if_interrupted).
// `wait_slice(end)` waits no later than `end` and returns true once what it waits for happened;
// without an installed check the first slice is the whole wait. Returns false at `until`.
template <typename WaitSlice>
bool wait_in_slices(std::chrono::steady_clock::time_point until, WaitSlice wait_slice) {
  while (true) {
    throw_if_interrupted();
    const auto slice = std::chrono::milliseconds(interruptible_slice_ms(INT_MAX));
    if (wait_slice(std::min(until, std::chrono::steady_clock::now() + slice))) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
  }
}

// Locks `mutex` for a call that may queue behind another thread's call holding it (which waits on a
// peer, so for up to its own deadline): asks the interrupt check while it waits, and throws
// Error(Status::kTimeout) naming `what` when `deadline` passes first.
std::unique_lock<std::timed_mutex> lock_interruptibly(std::timed_mutex& mutex, Deadline deadline,
                                                      const std::string& what);

}  // namespace memloom::base
