#include "tests/support/forked_child.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <thread>

namespace memloom::testing {
namespace {

constexpr uid_t kNobody = 65534;

}  // namespace

bool other_user_available() {
  return ::geteuid() == 0;
}

std::string ChildResult::describe() const {
  if (timed_out) return "the child process timed out";
  if (signal != 0) return "the child process died of signal " + std::to_string(signal);
  return "the child process exited with " + std::to_string(exit_code);
}

pid_t fork_child(const std::function<int()>& body, ChildUser user) {
  const pid_t child = ::fork();
  if (child != 0) return child;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (user == ChildUser::kNobody &&
      (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) {
    ::_exit(98);
  }
  int code = 99;
  try {
    code = body();
  } catch (const std::exception&) {
    code = 99;
  }
  ::_exit(code);
}

ChildResult wait_child(pid_t child, std::chrono::milliseconds timeout) {
  ChildResult result;
  if (child < 0) return result;
  const auto end = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) != child) {
    if (std::chrono::steady_clock::now() >= end) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      result.timed_out = true;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

ChildResult run_in_child(const std::function<int()>& body, std::chrono::milliseconds timeout,
                         ChildUser user) {
  return wait_child(fork_child(body, user), timeout);
}

}  // namespace memloom::testing
