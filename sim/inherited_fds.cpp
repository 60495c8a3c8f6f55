#include "sim/inherited_fds.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "memloom/error.h"

namespace memloom::sim {

std::vector<int> open_fds_above_stderr() {
  DIR* directory = ::opendir("/proc/self/fd");
  if (directory == nullptr) raise_errno("cannot list /proc/self/fd", errno);
  const int own_fd = ::dirfd(directory);
  std::vector<int> fds;
  while (dirent* entry = ::readdir(directory)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd <= 2 || fd == own_fd) continue;
    fds.push_back(static_cast<int>(fd));
  }
  ::closedir(directory);
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::vector<FdRange> fds_not_inherited(const std::vector<int>& inherited) {
  std::vector<FdRange> ranges;
  unsigned next = 3;
  for (int fd : inherited) {
    if (fd < 3) continue;
    unsigned kept = static_cast<unsigned>(fd);
    if (kept > next) ranges.push_back(FdRange{next, kept - 1});
    if (kept >= next) next = kept + 1;
  }
  ranges.push_back(FdRange{next, UINT_MAX});
  return ranges;
}

void mark_close_on_exec(const std::vector<FdRange>& ranges, unsigned max_fd) noexcept {
  for (const FdRange& range : ranges) {
    if (::syscall(SYS_close_range, range.first, range.last, CLOSE_RANGE_CLOEXEC) == 0) continue;
    // Kernels before 5.11 lack CLOSE_RANGE_CLOEXEC: mark one descriptor at a time.
    unsigned last = range.last < max_fd ? range.last : max_fd;
    for (unsigned fd = range.first; fd <= last; ++fd) {
      int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
      if (flags >= 0) ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
    }
  }
}

}  // namespace memloom::sim
