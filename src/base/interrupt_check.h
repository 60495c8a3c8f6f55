// The library's side of memloom/interrupt.h: what wait loops on a caller's thread use to ask the
// check the caller installed.
#pragma once

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

}  // namespace memloom::base
