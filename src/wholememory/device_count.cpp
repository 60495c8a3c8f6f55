#include "src/wholememory/device_count.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/platform_loader.h"

namespace memloom::wholememory {

int device_count_in_child(std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) raise_errno("pipe2 for fork_get_device_count", errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    raise_errno("fork for fork_get_device_count", error);
  }
  if (pid == 0) {
    ::close(fds[0]);
    int count = -1;
    try {
      count = core::platform().device_count();
    } catch (...) {
      count = -1;
    }
    const bool sent = ::write(fds[1], &count, sizeof(count)) == static_cast<ssize_t>(sizeof(count));
    ::_exit(sent ? 0 : 1);  // _exit: the child must not run the parent's atexit handlers
  }
  ::close(fds[1]);
  const Deadline deadline = Deadline::after(timeout);
  int count = -1;
  ssize_t got = -1;
  while (true) {
    pollfd entry{fds[0], POLLIN, 0};
    const int ready = ::poll(&entry, 1, deadline.poll_timeout_ms(1000));
    if (ready > 0) {
      got = ::read(fds[0], &count, sizeof(count));
      break;
    }
    if (ready < 0 && errno != EINTR) break;
    if (deadline.expired()) break;
  }
  ::close(fds[0]);
  if (got != static_cast<ssize_t>(sizeof(count))) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    raise(deadline.expired() ? Status::kTimeout : Status::kSystem,
          "the child asked for the device count did not answer");
  }
  ::waitpid(pid, nullptr, 0);
  return count;
}

}  // namespace memloom::wholememory
