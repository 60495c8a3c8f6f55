#include "src/base/fd_wait.h"

#include <poll.h>

#include <cerrno>

#include "memloom/error.h"
#include "src/base/interrupt_check.h"

namespace memloom::base {

WaitResult wait_for(int fd, short events, Deadline deadline, int stop_fd) {
  // The slice keeps poll's int timeout in range for far deadlines (readiness or the stop
  // descriptor ends a slice at once), and is shorter while the caller's interrupt check must be
  // asked (memloom/interrupt.h).
  constexpr int kSliceMs = 1000;
  while (true) {
    throw_if_interrupted();
    pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int rc = ::poll(fds, stop_fd >= 0 ? 2 : 1,
                    deadline.poll_timeout_ms(interruptible_slice_ms(kSliceMs)));
    if (rc < 0 && errno != EINTR) raise_errno("poll", errno);
    if (rc > 0) {
      if (stop_fd >= 0 && fds[1].revents != 0) return WaitResult::kStopped;
      if (fds[0].revents != 0) return WaitResult::kReady;
    }
    if (deadline.expired()) return WaitResult::kTimeout;
  }
}

}  // namespace memloom::base
