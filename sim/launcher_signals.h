// The signals memloom-run reacts to, delivered through a signalfd so the supervision loop sees
// them in its poll() next to the ranks' output. They are blocked in every thread, which only
// works if this object exists before the first thread (the embedded store) starts.
#pragma once

#include <signal.h>

#include <vector>

namespace memloom::sim {

class LauncherSignals {
 public:
  // Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP, opens a signalfd for them and ignores SIGPIPE
  // (a closed stdout must not kill the launcher before it cleans up). Throws on failure.
  LauncherSignals();
  // Restores the signal mask and SIGPIPE disposition.
  ~LauncherSignals();
  LauncherSignals(const LauncherSignals&) = delete;
  LauncherSignals& operator=(const LauncherSignals&) = delete;

  int fd() const { return fd_; }
  // The mask the process had before: what ranks must start with.
  const sigset_t& original_mask() const { return original_mask_; }
  // Every signal that is pending now, in arrival order; never blocks.
  std::vector<int> take_pending();

 private:
  int fd_ = -1;
  sigset_t original_mask_{};
  struct sigaction original_sigpipe_ {};
};

}  // namespace memloom::sim
