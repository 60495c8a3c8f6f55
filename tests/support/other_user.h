// Security tests play an adversary from another account: a forked child that drops to the
// unprivileged `nobody` user (uid/gid 65534, no supplementary groups) and runs a body there.
// Tests run as root in CI; as another user they cannot switch accounts and skip.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace memloom::testing {

// True when this process may become another user (it runs as root).
bool other_user_available();

struct OtherUserResult {
  int exit_code = -1;  // the body's return value; -1 when it did not exit normally
  int signal = 0;      // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string describe() const;
};

// Forks a child that becomes `nobody`, runs body() and exits with its return value (an exception
// becomes exit code 99). A child still running at `timeout` is SIGKILLed and reported timed out.
OtherUserResult run_as_other_user(const std::function<int()>& body,
                                  std::chrono::milliseconds timeout);

}  // namespace memloom::testing
