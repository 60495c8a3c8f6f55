#include "src/smem/trans/peer_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "memloom/error.h"

namespace memloom::smem::trans {
namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

PeerProcess::PeerProcess(const std::string& peer_name, pid_t pid) : pid_(pid) {
  pidfd_.reset(open_pidfd(pid));
  if (!pidfd_.valid() && errno == ESRCH) {
    raise(Status::kCommunication,
          "peer '" + peer_name + "' (pid " + std::to_string(pid) + ") has exited");
  }
}

bool PeerProcess::exited() const {
  if (pidfd_.valid()) {
    pollfd exited{pidfd_.get(), POLLIN, 0};
    return ::poll(&exited, 1, 0) != 0;
  }
  return ::kill(pid_, 0) != 0 && errno == ESRCH;
}

}  // namespace memloom::smem::trans
