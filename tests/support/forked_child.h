// A body run in a forked child process, bounded in time: the adversary of security tests (often
// from another account: the unprivileged `nobody`, uid/gid 65534, no supplementary groups) and
// any test that needs a process of its own. Tests run as root in CI; as another user they cannot
// switch accounts, and tests that need it skip.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

namespace memloom::testing {

// True when this process may become another user (it runs as root).
bool other_user_available();

enum class ChildUser { kSame, kNobody };

struct ChildResult {
  int exit_code = -1;  // the body's return value; -1 when it did not exit normally
  int signal = 0;      // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string describe() const;
};

// Forks a child that (as `nobody` with kNobody: exit code 98 when it cannot become nobody) runs
// body() and exits with its return value (an exception: 99). The child dies with its parent.
pid_t fork_child(const std::function<int()>& body, ChildUser user = ChildUser::kSame);

// Waits for a forked child, SIGKILLing it (and reporting it timed out) at the timeout.
ChildResult wait_child(pid_t child, std::chrono::milliseconds timeout);

// fork_child, then wait_child.
ChildResult run_in_child(const std::function<int()>& body, std::chrono::milliseconds timeout,
                         ChildUser user = ChildUser::kSame);

// run_in_child as `nobody`.
inline ChildResult run_as_other_user(const std::function<int()>& body,
                                     std::chrono::milliseconds timeout) {
  return run_in_child(body, timeout, ChildUser::kNobody);
}

}  // namespace memloom::testing
