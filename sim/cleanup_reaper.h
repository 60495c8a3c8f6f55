// Cleanup that survives the launcher: a SIGKILLed memloom-run runs no destructor, so without help
// its runtime directory (and any /dev/shm entry named after the job) would stay behind. The
// reaper is a small process of its own that waits for the launcher's end of a pipe to close -
// which the kernel does however the launcher ends - then removes both.
#pragma once

#include <sys/types.h>

#include <string>

namespace memloom::sim {

class CleanupReaper {
 public:
  // Forks the reaper. Call it while the launcher has no other thread: the reaper runs library
  // code (directory walks, allocation) in the forked child without exec.
  CleanupReaper(std::string runtime_dir, std::string shm_prefix);
  // The launcher's normal end: closes the pipe and waits (at most 2 s) for the reaper's last
  // removal pass, so that nothing of the job remains when memloom-run exits.
  ~CleanupReaper();
  CleanupReaper(const CleanupReaper&) = delete;
  CleanupReaper& operator=(const CleanupReaper&) = delete;

 private:
  int launcher_end_ = -1;  // the pipe's write end, held only by the launcher
  pid_t reaper_ = -1;
};

}  // namespace memloom::sim
