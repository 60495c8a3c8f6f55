// Runs the ranks of one job and decides how it ends. A single-threaded poll() loop watches the
// ranks' output pipes and the launcher's signals, and fires the timers (grace period after a
// failure, SIGKILL one second after SIGTERM, --timeout, fault injections).
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/inherited_fds.h"
#include "sim/launch_options.h"
#include "sim/launcher_signals.h"
#include "sim/output_prefixer.h"
#include "sim/rank_environment.h"
#include "sim/rank_process.h"

namespace memloom::sim {

// Why the job ended, first cause wins.
enum class JobVerdict { kAllPassed, kRankFailed, kTimedOut, kLauncherSignaled };

struct JobOutcome {
  JobVerdict verdict = JobVerdict::kAllPassed;
  int exit_code = 0;
  std::string report;  // one line for stderr, without the "memloom-run: " prefix ("" if passed)
};

class JobSupervisor {
 public:
  // program_path: the resolved PROGRAM (see find_program). The supervisor writes the ranks'
  // output to its own stdout/stderr.
  // private_fds: the launcher's own descriptors, kept from the ranks (see inherited_fds.h).
  JobSupervisor(const LaunchOptions& options, const JobIdentity& identity, std::string program_path,
                LauncherSignals& signals, std::vector<FdRange> private_fds);
  ~JobSupervisor();  // any rank still alive (after an exception) is killed and reaped

  // Starts the ranks and supervises them until every one has ended. Throws memloom::Error if a
  // rank cannot be started (the ranks already started are killed).
  JobOutcome run();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kRunning, kGrace, kTerminating, kKilling };

  struct RankOutput {
    std::unique_ptr<OutputPrefixer> out;
    std::unique_ptr<OutputPrefixer> err;
  };
  struct ScheduledKill {
    RankKill kill;
    Clock::time_point at;
    bool done = false;
  };

  void spawn_ranks();
  void supervise();
  void fire_timers(Clock::time_point now);
  std::optional<Clock::time_point> next_timer() const;
  void on_signal(int sig);
  void reap_ranks();
  void on_rank_ended(int rank);
  void terminate_all(int sig);
  void kill_all_now();
  size_t running_count() const;
  // Reads what the rank's pipes hold now; closes a pipe at EOF.
  void drain_output(int rank);
  void read_stream(int rank, bool is_stderr);
  // Appends a poll() entry for each rank's pipe still open to fds and its (rank, is_stderr) to
  // owners, so that the supervising loop and the final drain watch the same streams.
  void watch_open_streams(std::vector<pollfd>& fds,
                          std::vector<std::pair<int, bool>>& owners) const;
  void drain_until_closed();
  JobOutcome outcome() const;

  LaunchOptions options_;
  JobIdentity identity_;
  std::string program_path_;
  LauncherSignals& signals_;
  std::vector<FdRange> private_fds_;
  unsigned max_fd_ = 1023;

  std::vector<std::unique_ptr<RankProcess>> ranks_;
  std::vector<RankOutput> outputs_;
  std::vector<ScheduledKill> kills_;

  Clock::time_point start_;
  Phase phase_ = Phase::kRunning;
  Clock::time_point grace_end_;
  Clock::time_point sigkill_at_;
  JobVerdict verdict_ = JobVerdict::kAllPassed;
  int failed_rank_ = -1;
  int failed_status_ = 0;
  std::string failed_exec_error_;
  int launcher_signal_ = 0;
  size_t stopped_ranks_ = 0;  // ranks still running when the launcher began stopping them
};

}  // namespace memloom::sim
