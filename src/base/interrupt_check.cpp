#include "src/base/interrupt_check.h"

#include <chrono>

#include "memloom/error.h"
#include "memloom/interrupt.h"

namespace memloom::base {
namespace {

using Clock = std::chrono::steady_clock;

struct InstalledCheck {
  memloom_interrupt_check_t check = nullptr;
  void* context = nullptr;
  // When the check is next due; a zero time point: not looked at since it was installed. The
  // first look only starts the clock, so a call that waits less than a slice never pays for the
  // check (the Python one takes the GIL).
  Clock::time_point due{};
};

thread_local InstalledCheck t_installed;

}  // namespace

bool interrupt_check_installed() {
  return t_installed.check != nullptr;
}

int interruptible_slice_ms(int cap_ms) {
  const InstalledCheck& installed = t_installed;
  if (installed.check == nullptr) return cap_ms;
  int until_due = kInterruptSliceMs;
  if (installed.due != Clock::time_point{}) {
    // Rounded up: a poll that woke a little early would otherwise find the check not yet due.
    const auto left = installed.due - Clock::now();
    until_due = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    if (until_due < 0) until_due = 0;
  }
  return until_due < cap_ms ? until_due : cap_ms;
}

void throw_if_interrupted() {
  InstalledCheck& installed = t_installed;
  if (installed.check == nullptr) return;
  const Clock::time_point now = Clock::now();
  if (installed.due == Clock::time_point{}) {
    installed.due = now + std::chrono::milliseconds(kInterruptSliceMs);
    return;
  }
  if (now < installed.due) return;
  installed.due = now + std::chrono::milliseconds(kInterruptSliceMs);
  if (installed.check(installed.context) != 0) {
    raise(Status::kInterrupted, "interrupted by the caller while waiting on a peer");
  }
}

std::unique_lock<std::timed_mutex> lock_interruptibly(std::timed_mutex& mutex, Deadline deadline,
                                                      const std::string& what) {
  std::unique_lock<std::timed_mutex> lock(mutex, std::defer_lock);
  if (!wait_in_slices(deadline.time_point(), [&](auto end) { return lock.try_lock_until(end); })) {
    raise(Status::kTimeout, "timed out waiting for " + what);
  }
  return lock;
}

}  // namespace memloom::base

extern "C" void memloom_interrupt_check_set(memloom_interrupt_check_t check, void* context) {
  memloom::base::t_installed = {check, context, {}};
}
