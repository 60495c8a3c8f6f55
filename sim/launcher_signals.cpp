#include "sim/launcher_signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include "memloom/error.h"

namespace memloom::sim {

LauncherSignals::LauncherSignals() {
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  int rc = ::pthread_sigmask(SIG_BLOCK, &handled, &original_mask_);
  if (rc != 0) raise_errno("cannot block the launcher's signals", rc);
  fd_ = ::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    int error = errno;
    ::pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
    raise_errno("cannot open a signalfd", error);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &original_sigpipe_);
}

LauncherSignals::~LauncherSignals() {
  // Consume what is still pending: unblocking a pending SIGTERM would kill the process now.
  take_pending();
  ::close(fd_);
  ::sigaction(SIGPIPE, &original_sigpipe_, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
}

std::vector<int> LauncherSignals::take_pending() {
  std::vector<int> signals;
  signalfd_siginfo info{};
  while (true) {
    ssize_t n = ::read(fd_, &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: nothing more pending
  }
  return signals;
}

}  // namespace memloom::sim
