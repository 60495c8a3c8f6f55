// What a job leaves on the machine and how the launcher removes it: a per-job runtime directory
// and, as a safety net, /dev/shm entries carrying the job id (the backends use memfd and should
// leave none).
#pragma once

#include <cstddef>
#include <string>

namespace memloom::sim {

// "j" + 8 hex digits of the pid + 8 random hex digits. Fixed length, so no job id is a prefix of
// another and the "memloom.<job id>*" cleanup can never reach a different job's entries.
std::string make_job_id();

// Chooses the parent of runtime directories: $XDG_RUNTIME_DIR when it is a writable directory,
// else /tmp.
std::string runtime_parent_directory();

// A directory private to one job (mode 0700), created on construction and removed with all its
// content on destruction or remove().
class RuntimeDirectory {
 public:
  RuntimeDirectory(const std::string& parent, const std::string& job_id);
  ~RuntimeDirectory();
  RuntimeDirectory(const RuntimeDirectory&) = delete;
  RuntimeDirectory& operator=(const RuntimeDirectory&) = delete;

  const std::string& path() const { return path_; }
  // Removes the directory tree; returns false (and keeps trying on destruction) if it could not.
  bool remove();

 private:
  std::string path_;
  bool removed_ = false;
};

// Removes entries of `directory` whose name starts with `prefix`; returns how many it removed.
size_t remove_entries_with_prefix(const std::string& directory, const std::string& prefix);

// The /dev/shm prefix of a job: "memloom.<job id>".
std::string shm_prefix(const std::string& job_id);

}  // namespace memloom::sim
