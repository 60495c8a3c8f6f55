#include "tests/support/other_user.h"

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

std::string OtherUserResult::describe() const {
  if (timed_out) return "the other user's process timed out";
  if (signal != 0) return "the other user's process died of signal " + std::to_string(signal);
  return "the other user's process exited with " + std::to_string(exit_code);
}

OtherUserResult run_as_other_user(const std::function<int()>& body,
                                  std::chrono::milliseconds timeout) {
  OtherUserResult result;
  const pid_t child = ::fork();
  if (child < 0) return result;
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
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
  const auto end = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
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

}  // namespace memloom::testing
