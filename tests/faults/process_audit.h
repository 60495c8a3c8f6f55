// What a job leaves behind: open file descriptors of a process (grouped by kind, with TCP sockets
// told apart from Unix ones), live child processes, and memloom entries in /dev/shm. The fault,
// load and soak checks compare a snapshot taken before the work with one taken after it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace memloom::faults {

// This process's open descriptors by kind: "tcp", "unix", "socket" (other families), "pipe",
// "memfd:<name>", "anon:<what>", "file:<path>".
struct FdCensus {
  std::map<std::string, int> kinds;
  int total = 0;
  int count(const std::string& kind) const;
  std::string describe() const;
};

FdCensus take_fd_census();

// "" when `after` holds no kind more often than `before`, else what grew ("tcp +2, pipe +1").
std::string fd_growth(const FdCensus& before, const FdCensus& after);

// Makes this process adopt orphaned descendants, so live_children() also sees grandchildren whose
// parent died (a rank's helper process outliving its rank).
void become_subreaper();

// Pids of this process's children that are still alive (zombies excluded).
std::vector<int> live_children();

// Resident set size of this process in bytes.
size_t resident_bytes();

}  // namespace memloom::faults
