// The bounded wait on a descriptor that every socket helper uses: poll() until the descriptor is
// ready, a stop descriptor fires or the deadline passes.
#pragma once

#include "memloom/deadline.h"

namespace memloom::base {

enum class WaitResult { kReady, kTimeout, kStopped };

// Waits until fd is ready for `events` (POLLIN/POLLOUT), stop_fd (-1: none) is readable, or the
// deadline passes. Throws (raise_errno "poll") when poll fails other than by EINTR, and
// kInterrupted when the interrupt check installed on this thread says so (interrupt_check.h).
WaitResult wait_for(int fd, short events, Deadline deadline, int stop_fd = -1);

// wait_for without a stop descriptor: true when fd is ready, false at the deadline.
inline bool wait_ready(int fd, short events, Deadline deadline) {
  return wait_for(fd, events, deadline) == WaitResult::kReady;
}

}  // namespace memloom::base
