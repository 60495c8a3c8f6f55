// Runs memloom-run as a child of the test, the way a user would, and checks that a job left
// nothing behind. Ranks in these tests are small sh scripts that print what they see.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace memloom::sim::testing {

struct LauncherRun {
  int exit_code = -1;      // memloom-run's exit code; -1 if it died of a signal
  int signal = 0;          // the signal that killed memloom-run, if any
  bool timed_out = false;  // the harness had to kill it
  std::string out;
  std::string err;
  double seconds = 0.0;  // wall time from start to exit
};

struct LauncherRunOptions {
  std::chrono::milliseconds timeout{20000};
  // Called with memloom-run's pid and all stdout so far, after every chunk of stdout.
  std::function<void(pid_t, const std::string&)> on_stdout;
  std::map<std::string, std::string> env;  // added to (or replacing) the test's environment
  // memloom-run gets only stdin/stdout/stderr, plus /dev/null as this descriptor if >= 3.
  int inherited_fd = -1;
};

// Runs `memloom-run args...` and waits (bounded) for it to exit and close its output.
LauncherRun run_memloom_run(const std::vector<std::string>& args,
                            const LauncherRunOptions& options = {});

std::vector<std::string> lines_of(const std::string& text);
// The lines of `text` that memloom-run tagged with "[rank R] ", with the tag removed.
std::vector<std::string> rank_lines(const std::string& text, int rank);

// A line for sh scripts: every rank announces its pid, job id and runtime directory, which
// expect_job_cleaned_up later checks.
inline constexpr const char* kAnnounce =
    "echo \"info pid=$$ job=$MEMLOOM_JOB_ID dir=$MEMLOOM_RUNTIME_DIR\"";

struct RankAnnouncement {
  pid_t pid = -1;
  std::string job_id;
  std::string runtime_dir;
};
// Every "info pid=... job=... dir=..." line of stdout.
std::vector<RankAnnouncement> announcements(const LauncherRun& run);
// Every "child=PID" token of stdout: descendants of ranks the scripts started.
std::vector<pid_t> announced_children(const LauncherRun& run);

// True once pid no longer runs (gone or a zombie), waiting at most `wait`.
bool process_ended(pid_t pid, std::chrono::milliseconds wait);

// Entries of /dev/shm that start with prefix.
std::vector<std::string> shm_entries(const std::string& prefix);

// Checks (gtest EXPECTs) that no announced rank or child still runs, that every runtime
// directory is gone and that no /dev/shm entry of the job is left. Expects at least
// `expected_ranks` announcements.
void expect_job_cleaned_up(const LauncherRun& run, size_t expected_ranks);

}  // namespace memloom::sim::testing
