#include "sim/job_supervisor.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "memloom/error.h"
#include "sim/exit_codes.h"

extern char** environ;

namespace memloom::sim {
namespace {

// A stopped rank gets this long between SIGTERM and SIGKILL.
constexpr std::chrono::seconds kTermToKill{1};
// After SIGKILL the kernel tears a process down at once; this only bounds a pathological case
// (a process stuck in uninterruptible sleep) so the launcher never hangs.
constexpr std::chrono::seconds kKillToGiveUp{5};
// How long the launcher keeps reading output after the last rank ended (descendants that
// escaped the process group may still hold the pipes).
constexpr std::chrono::seconds kFinalDrain{1};
// How long an injected SIGKILL may take to show up as the rank's exit.
constexpr std::chrono::milliseconds kInjectionReap{200};
constexpr size_t kReadChunk = 64 * 1024;
// Per wake-up and stream, so one chatty rank cannot starve the timers and the other ranks.
constexpr size_t kMaxReadPerWake = 1 << 20;

std::string format_seconds(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

void write_line_to(int fd, std::string_view line) {
  // Output that cannot be written (stdout closed) is dropped: supervision must go on.
  (void)write_fully(fd, line);
}

std::vector<std::string> current_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    entries.emplace_back(*entry);
  }
  return entries;
}

}  // namespace

JobSupervisor::JobSupervisor(const LaunchOptions& options, const JobIdentity& identity,
                             std::string program_path, LauncherSignals& signals,
                             std::vector<FdRange> private_fds)
    : options_(options),
      identity_(identity),
      program_path_(std::move(program_path)),
      signals_(signals),
      private_fds_(std::move(private_fds)) {
  // Bounds the fallback of mark_close_on_exec on kernels without CLOSE_RANGE_CLOEXEC.
  constexpr rlim_t kCap = 1u << 20;
  rlimit limit{};
  rlim_t open_max = kCap;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    open_max = std::min<rlim_t>(limit.rlim_cur, kCap);
  }
  max_fd_ = static_cast<unsigned>(open_max > 0 ? open_max - 1 : 0);
}

JobSupervisor::~JobSupervisor() {
  // RankProcess's destructor kills and reaps; kill all first so they die together.
  for (auto& rank : ranks_) {
    if (rank->running()) rank->signal_group(SIGKILL);
  }
}

JobOutcome JobSupervisor::run() {
  spawn_ranks();
  // The clocks of --timeout and --kill-after start once every rank exists, so a slow start on a
  // loaded machine does not eat into them.
  start_ = Clock::now();
  for (const RankKill& kill : options_.kills) {
    auto offset = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(kill.after_seconds));
    kills_.push_back(ScheduledKill{kill, start_ + offset, false});
  }
  // Kills due in the same wake-up must still happen, and be reported, in time order.
  std::stable_sort(kills_.begin(), kills_.end(),
                   [](const ScheduledKill& a, const ScheduledKill& b) { return a.at < b.at; });
  supervise();
  // Whatever a rank left behind in its process group dies with the job.
  for (auto& rank : ranks_) rank->signal_group(SIGKILL);
  drain_until_closed();
  return outcome();
}

void JobSupervisor::spawn_ranks() {
  const std::vector<std::string> base_environment = current_environment();
  ranks_.reserve(static_cast<size_t>(options_.ranks));
  outputs_.resize(static_cast<size_t>(options_.ranks));
  for (int rank = 0; rank < options_.ranks; ++rank) {
    RankPlacement placement =
        place_rank(rank, options_.ranks, options_.nodes, options_.devices_per_node);
    RankSpawnRequest request;
    request.rank = rank;
    request.program_path = program_path_;
    request.argv = options_.command;
    request.environment = merge_environment(base_environment, rank_variables(placement, identity_));
    request.capture_output = options_.tag_output;
    request.child_signal_mask = signals_.original_mask();
    request.close_on_exec = private_fds_;
    request.max_fd = max_fd_;
    ranks_.push_back(RankProcess::spawn(request));
    if (options_.tag_output) {
      std::string prefix = "[rank " + std::to_string(rank) + "] ";
      outputs_[rank].out = std::make_unique<OutputPrefixer>(
          prefix, [](std::string_view line) { write_line_to(STDOUT_FILENO, line); });
      outputs_[rank].err = std::make_unique<OutputPrefixer>(
          prefix, [](std::string_view line) { write_line_to(STDERR_FILENO, line); });
    }
  }
}

void JobSupervisor::supervise() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, bool>> owners;  // (rank, is_stderr) of fds[i + 1]
  Clock::time_point give_up_at{};
  while (running_count() > 0) {
    Clock::time_point now = Clock::now();
    fire_timers(now);
    if (phase_ == Phase::kKilling) {
      if (give_up_at == Clock::time_point{}) give_up_at = now + kKillToGiveUp;
      if (now >= give_up_at) {
        write_line_to(STDERR_FILENO, "memloom-run: some ranks did not end after SIGKILL\n");
        return;
      }
    }

    fds.clear();
    owners.clear();
    fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
    watch_open_streams(fds, owners);
    int timeout_ms = 1000;
    if (auto next = next_timer()) {
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now).count() + 1;
      timeout_ms = static_cast<int>(std::clamp<long long>(wait, 0, 1000));
    }
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) raise_errno("poll failed while supervising the ranks", errno);

    bool child_ended = ready == 0;  // on a quiet wake-up, check the ranks anyway
    if (ready > 0 && fds[0].revents != 0) {
      for (int sig : signals_.take_pending()) {
        if (sig == SIGCHLD) {
          child_ended = true;
        } else {
          on_signal(sig);
        }
      }
    }
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_stream(owners[i - 1].first, owners[i - 1].second);
    }
    if (child_ended) reap_ranks();
  }
}

void JobSupervisor::fire_timers(Clock::time_point now) {
  const bool live = phase_ == Phase::kRunning || phase_ == Phase::kGrace;
  for (ScheduledKill& scheduled : kills_) {
    if (scheduled.done || now < scheduled.at) continue;
    scheduled.done = true;
    RankProcess& target = *ranks_[scheduled.kill.rank];
    if (!live || !target.running()) continue;
    write_line_to(STDERR_FILENO, "memloom-run: fault injection: SIGKILL to rank " +
                                     std::to_string(scheduled.kill.rank) + " after " +
                                     format_seconds(scheduled.kill.after_seconds) + " s\n");
    target.signal_group(SIGKILL);
    // Reap the victim now (SIGKILL takes effect at once), so that when several injections are
    // due together the first one is the failure the job reports.
    const Clock::time_point reap_until = Clock::now() + kInjectionReap;
    while (!target.try_reap() && Clock::now() < reap_until) ::usleep(500);
    if (!target.running()) on_rank_ended(scheduled.kill.rank);
  }
  if (live && options_.timeout_seconds &&
      now >= start_ + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(*options_.timeout_seconds))) {
    if (verdict_ == JobVerdict::kAllPassed) verdict_ = JobVerdict::kTimedOut;
    terminate_all(SIGTERM);
    return;
  }
  if (phase_ == Phase::kGrace && now >= grace_end_) {
    terminate_all(SIGTERM);
  } else if (phase_ == Phase::kTerminating && now >= sigkill_at_) {
    kill_all_now();
  }
}

std::optional<JobSupervisor::Clock::time_point> JobSupervisor::next_timer() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point at) {
    if (!next || at < *next) next = at;
  };
  if (phase_ == Phase::kRunning || phase_ == Phase::kGrace) {
    for (const ScheduledKill& scheduled : kills_) {
      if (!scheduled.done) consider(scheduled.at);
    }
    if (options_.timeout_seconds) {
      consider(start_ + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(*options_.timeout_seconds)));
    }
  }
  if (phase_ == Phase::kGrace) consider(grace_end_);
  if (phase_ == Phase::kTerminating) consider(sigkill_at_);
  return next;
}

void JobSupervisor::on_signal(int sig) {
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) return;
  if (launcher_signal_ != 0 || phase_ == Phase::kTerminating || phase_ == Phase::kKilling) {
    // The user insists, or the job is already being stopped: do not make them wait.
    if (launcher_signal_ == 0) launcher_signal_ = sig;
    kill_all_now();
    return;
  }
  launcher_signal_ = sig;
  if (verdict_ == JobVerdict::kAllPassed) verdict_ = JobVerdict::kLauncherSignaled;
  terminate_all(sig);  // forward the very signal, as a terminal would to a foreground job
}

void JobSupervisor::reap_ranks() {
  for (int rank = 0; rank < options_.ranks; ++rank) {
    if (ranks_[rank]->try_reap()) on_rank_ended(rank);
  }
}

void JobSupervisor::on_rank_ended(int rank) {
  // What the rank wrote before it ended is in the pipe: print it, and complete its last line.
  drain_output(rank);
  if (outputs_[rank].out) outputs_[rank].out->finish();
  if (outputs_[rank].err) outputs_[rank].err->finish();

  const RankProcess& process = *ranks_[rank];
  int status = process.wait_status();
  bool passed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (passed || verdict_ != JobVerdict::kAllPassed) return;
  verdict_ = JobVerdict::kRankFailed;
  failed_rank_ = rank;
  failed_status_ = status;
  failed_exec_error_ = process.exec_error();
  if (phase_ == Phase::kRunning) {
    phase_ = Phase::kGrace;
    grace_end_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options_.grace_seconds));
  }
}

void JobSupervisor::terminate_all(int sig) {
  if (phase_ == Phase::kRunning || phase_ == Phase::kGrace) stopped_ranks_ = running_count();
  for (auto& rank : ranks_) {
    if (rank->running()) rank->signal_group(sig);
  }
  phase_ = Phase::kTerminating;
  sigkill_at_ = Clock::now() + kTermToKill;
}

void JobSupervisor::kill_all_now() {
  if (phase_ == Phase::kRunning || phase_ == Phase::kGrace) stopped_ranks_ = running_count();
  for (auto& rank : ranks_) {
    if (rank->running()) rank->signal_group(SIGKILL);
  }
  phase_ = Phase::kKilling;
}

size_t JobSupervisor::running_count() const {
  return static_cast<size_t>(std::count_if(ranks_.begin(), ranks_.end(),
                                           [](const auto& rank) { return rank->running(); }));
}

void JobSupervisor::watch_open_streams(std::vector<pollfd>& fds,
                                       std::vector<std::pair<int, bool>>& owners) const {
  for (int rank = 0; rank < options_.ranks; ++rank) {
    for (bool is_stderr : {false, true}) {
      int fd = is_stderr ? ranks_[rank]->stderr_fd() : ranks_[rank]->stdout_fd();
      if (fd < 0) continue;
      fds.push_back(pollfd{fd, POLLIN, 0});
      owners.emplace_back(rank, is_stderr);
    }
  }
}

void JobSupervisor::drain_output(int rank) {
  read_stream(rank, false);
  read_stream(rank, true);
}

void JobSupervisor::read_stream(int rank, bool is_stderr) {
  RankProcess& process = *ranks_[rank];
  int fd = is_stderr ? process.stderr_fd() : process.stdout_fd();
  if (fd < 0) return;
  OutputPrefixer& prefixer = is_stderr ? *outputs_[rank].err : *outputs_[rank].out;
  char buffer[kReadChunk];
  size_t total = 0;
  while (total < kMaxReadPerWake) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      prefixer.feed(std::string_view(buffer, static_cast<size_t>(n)));
      total += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF (every writer is gone) or a broken pipe: the stream is over.
    prefixer.finish();
    if (is_stderr) {
      process.close_stderr();
    } else {
      process.close_stdout();
    }
    return;
  }
}

void JobSupervisor::drain_until_closed() {
  const Clock::time_point until = Clock::now() + kFinalDrain;
  std::vector<pollfd> fds;
  std::vector<std::pair<int, bool>> owners;
  while (true) {
    fds.clear();
    owners.clear();
    watch_open_streams(fds, owners);
    if (fds.empty()) return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) break;
    int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_stream(owners[i].first, owners[i].second);
    }
  }
  // Writers that outlived the job (they left the process group): stop listening to them.
  for (int rank = 0; rank < options_.ranks; ++rank) {
    if (outputs_[rank].out) outputs_[rank].out->finish();
    if (outputs_[rank].err) outputs_[rank].err->finish();
    ranks_[rank]->close_stdout();
    ranks_[rank]->close_stderr();
  }
}

JobOutcome JobSupervisor::outcome() const {
  JobOutcome result;
  result.verdict = verdict_;
  std::string stopped = std::to_string(stopped_ranks_) + " rank(s) still running";
  switch (verdict_) {
    case JobVerdict::kAllPassed:
      result.exit_code = kExitSuccess;
      break;
    case JobVerdict::kRankFailed: {
      result.exit_code = exit_code_of(failed_status_);
      std::string how = describe_wait_status(failed_status_);
      if (!failed_exec_error_.empty()) how = failed_exec_error_ + " (" + how + ")";
      result.report = "rank " + std::to_string(failed_rank_) + " failed first: " + how +
                      "; stopped " + stopped + "; exit code " + std::to_string(result.exit_code);
      break;
    }
    case JobVerdict::kTimedOut:
      result.exit_code = kExitTimeout;
      result.report = "timed out after " + format_seconds(options_.timeout_seconds.value_or(0.0)) +
                      " s; stopped " + stopped + "; exit code " + std::to_string(result.exit_code);
      break;
    case JobVerdict::kLauncherSignaled:
      result.exit_code = kExitSignalBase + launcher_signal_;
      result.report = "received " + signal_name(launcher_signal_) + "; forwarded it to " + stopped +
                      "; exit code " + std::to_string(result.exit_code);
      break;
  }
  return result;
}

}  // namespace memloom::sim
