#include "sim/cleanup_reaper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "memloom/error.h"
#include "sim/job_cleanup.h"

namespace memloom::sim {
namespace {

constexpr int kReaperPipeFd = 3;

void remove_job_leftovers(const std::string& runtime_dir, const std::string& shm_prefix) {
  std::error_code ignored;
  std::filesystem::remove_all(runtime_dir, ignored);
  remove_entries_with_prefix("/dev/shm", shm_prefix);
}

[[noreturn]] void run_reaper(int launcher_gone, const std::string& runtime_dir,
                             const std::string& shm_prefix) {
  // Its own session: a Ctrl-C or SIGHUP for the job's terminal (or process group) must not take
  // the reaper before it has cleaned up after the launcher.
  ::setsid();
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the launcher blocks the signals it handles
  // Hold nothing of the launcher's: a reader of its stdout waits for every copy to close, and
  // the ranks' pipes and inherited descriptors are not the reaper's business.
  const int null_fd = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(null_fd, fd);
  ::dup2(launcher_gone, kReaperPipeFd);
  if (::close_range(kReaperPipeFd + 1, ~0U, 0) != 0) {
    for (int fd = kReaperPipeFd + 1; fd < 65536; ++fd) ::close(fd);  // kernels before 5.9
  }

  char byte = 0;
  while (::read(kReaperPipeFd, &byte, 1) != 0) {
    if (errno != EINTR) break;
  }
  remove_job_leftovers(runtime_dir, shm_prefix);
  // Ranks die with the launcher (PR_SET_PDEATHSIG) but may still be exiting: a second pass
  // catches anything they created in between.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  remove_job_leftovers(runtime_dir, shm_prefix);
  ::_exit(0);
}

}  // namespace

CleanupReaper::CleanupReaper(std::string runtime_dir, std::string shm_prefix) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) raise_errno("the cleanup reaper's pipe", errno);
  reaper_ = ::fork();
  if (reaper_ < 0) {
    const int error = errno;
    ::close(ends[0]);
    ::close(ends[1]);
    raise_errno("starting the cleanup reaper", error);
  }
  if (reaper_ == 0) run_reaper(ends[0], runtime_dir, shm_prefix);
  ::close(ends[0]);
  launcher_end_ = ends[1];
}

CleanupReaper::~CleanupReaper() {
  ::close(launcher_end_);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (::waitpid(reaper_, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= end) return;  // it finishes on its own, reparented
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace memloom::sim
