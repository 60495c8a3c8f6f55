// One rank: a child process in its own process group, started with fork + execve so that it can
// be tied to the launcher's life (PR_SET_PDEATHSIG) before the program runs. The launcher may
// already run store threads, so the child does only async-signal-safe work between fork and exec.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/inherited_fds.h"

namespace memloom::sim {

struct RankSpawnRequest {
  int rank = 0;
  std::string program_path;              // absolute or relative path, already resolved
  std::vector<std::string> argv;         // argv[0] included
  std::vector<std::string> environment;  // "NAME=value" entries
  bool capture_output = true;            // stdout/stderr go to pipes the launcher reads
  sigset_t child_signal_mask{};          // restored in the child before exec
  std::vector<FdRange> close_on_exec;    // launcher-private descriptors (see inherited_fds.h)
  unsigned max_fd = 1023;                // the highest descriptor number that may be open
};

class RankProcess {
 public:
  // Starts the rank. Throws memloom::Error(kSystem) when a pipe or fork fails. If execve fails
  // the child exits 127 and exec_error() says why.
  static std::unique_ptr<RankProcess> spawn(const RankSpawnRequest& request);
  // Kills the rank's process group and reaps the rank if it still runs: a RankProcess never
  // leaves a process behind.
  ~RankProcess();
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  int rank() const { return rank_; }
  pid_t pid() const { return pid_; }
  bool running() const { return running_; }
  // Reaps the rank if it has ended, without blocking; returns true if it was reaped now.
  bool try_reap();
  // The waitpid status once reaped.
  int wait_status() const { return wait_status_; }
  // Why execve failed ("" if it did not).
  const std::string& exec_error() const { return exec_error_; }

  // Sends sig to the rank's whole process group (its children too). Harmless once it is gone.
  void signal_group(int sig) const;

  // The read ends of the rank's stdout and stderr pipes (-1 when not captured or closed).
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  void close_stdout();
  void close_stderr();

 private:
  RankProcess() = default;

  int rank_ = 0;
  pid_t pid_ = -1;
  bool running_ = false;
  int wait_status_ = 0;
  std::string exec_error_;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

// Resolves a program name like execvp would: a name with '/' is used as is, other names are
// searched in $PATH. Throws memloom::Error(kNotFound) with the reason when it cannot be run.
std::string find_program(const std::string& name);

// "SIGKILL" for 9; "signal 64" for numbers without a name.
std::string signal_name(int sig);

// "exited with code 3" / "killed by signal 9 (SIGKILL)" for a waitpid status.
std::string describe_wait_status(int status);

// The job exit code that a rank's waitpid status stands for: its code, or 128 + signal.
int exit_code_of(int status);

}  // namespace memloom::sim
