#include "sim/job_cleanup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include "memloom/error.h"

namespace memloom::sim {

std::string make_job_id() {
  std::random_device random;
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "j%08x%08x", static_cast<unsigned>(::getpid()),
                static_cast<unsigned>(random()));
  return buffer;
}

std::string runtime_parent_directory() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] == '/') {
    struct stat info {};
    if (::stat(xdg, &info) == 0 && S_ISDIR(info.st_mode) && ::access(xdg, W_OK | X_OK) == 0) {
      return xdg;
    }
  }
  return "/tmp";
}

RuntimeDirectory::RuntimeDirectory(const std::string& parent, const std::string& job_id)
    : path_(parent + "/memloom-" + job_id) {
  if (::mkdir(path_.c_str(), 0700) != 0) {
    raise_errno("cannot create the runtime directory " + path_, errno);
  }
}

RuntimeDirectory::~RuntimeDirectory() {
  remove();
}

bool RuntimeDirectory::remove() {
  if (removed_) return true;
  std::error_code error;
  // remove_all does not follow symlinks, so a rank's link to elsewhere cannot widen the damage.
  std::filesystem::remove_all(path_, error);
  removed_ = !error;
  return removed_;
}

size_t remove_entries_with_prefix(const std::string& directory, const std::string& prefix) {
  MEMLOOM_CHECK_ARG(!prefix.empty(), "an empty prefix would match every entry");
  // Collect first, remove after: removing while iterating may skip entries.
  std::vector<std::filesystem::path> matches;
  std::error_code error;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) matches.push_back(it->path());
  }
  size_t removed = 0;
  for (const auto& path : matches) {
    std::error_code remove_error;
    if (std::filesystem::remove_all(path, remove_error) > 0 && !remove_error) ++removed;
  }
  return removed;
}

std::string shm_prefix(const std::string& job_id) {
  return "memloom." + job_id;
}

}  // namespace memloom::sim
