// memloom-run: starts N ranks of a program on M emulated nodes of this machine and supervises
// them like a cluster job. See `memloom-run --help` (sim/launch_options.cpp) for the contract.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "sim/exit_codes.h"
#include "sim/job_runner.h"
#include "sim/launch_options.h"
#include "src/base/version.h"

namespace {

// A launcher started with fd 0, 1 or 2 closed would hand those numbers to its pipes, and a rank
// would then write into the wrong stream: occupy them with /dev/null first.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) continue;
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ensure_standard_fds_open();
  std::vector<std::string> args(argv + 1, argv + argc);
  memloom::sim::LaunchOptions options;
  try {
    options = memloom::sim::parse_launch_options(args);
  } catch (const memloom::Error& error) {
    std::fprintf(stderr, "memloom-run: %s\nTry 'memloom-run --help' for more information.\n",
                 error.what());
    return memloom::sim::kExitUsage;
  }
  if (options.show_version) {
    std::puts(memloom::base::version_line("memloom-run").c_str());
    return memloom::sim::kExitSuccess;
  }
  if (options.show_help) {
    std::fputs(memloom::sim::launch_usage().c_str(), stdout);
    return memloom::sim::kExitSuccess;
  }
  std::fflush(stdout);
  return memloom::sim::run_job(options);
}
