#include "sim/job_runner.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "sim/cleanup_reaper.h"
#include "sim/exit_codes.h"
#include "sim/inherited_fds.h"
#include "sim/job_cleanup.h"
#include "sim/job_supervisor.h"
#include "sim/launcher_signals.h"
#include "sim/rank_environment.h"
#include "sim/rank_process.h"
#include "src/store/server.h"

namespace memloom::sim {
namespace {

void print_error(const std::string& message) {
  std::string line = "memloom-run: " + message + "\n";
  (void)write_fully(STDERR_FILENO, line);
}

// Removes the job's /dev/shm entries on every way out, including exceptions. The backends use
// memfd, so this only catches what a crashed or misbehaving rank left.
class ShmSafetyNet {
 public:
  explicit ShmSafetyNet(std::string job_id) : prefix_(shm_prefix(job_id)) {}
  ~ShmSafetyNet() {
    size_t removed = remove_entries_with_prefix("/dev/shm", prefix_);
    if (removed > 0) {
      print_error("removed " + std::to_string(removed) + " leftover /dev/shm entr" +
                  (removed == 1 ? "y" : "ies") + " named " + prefix_ + "*");
    }
  }
  ShmSafetyNet(const ShmSafetyNet&) = delete;
  ShmSafetyNet& operator=(const ShmSafetyNet&) = delete;

 private:
  std::string prefix_;
};

// The launcher holds two pipes per rank open; lift the soft descriptor limit when -n needs it
// (ranks inherit the raised soft limit, which only ever gives them more room).
void ensure_descriptor_limit(int ranks) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) raise_errno("getrlimit(RLIMIT_NOFILE)", errno);
  const rlim_t needed = 2 * static_cast<rlim_t>(ranks) + 64;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    raise(Status::kInvalidValue, "-n " + std::to_string(ranks) + " needs " +
                                     std::to_string(needed) + " file descriptors but the hard " +
                                     "limit is " + std::to_string(limit.rlim_max) +
                                     " (ulimit -Hn)");
  }
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) raise_errno("setrlimit(RLIMIT_NOFILE)", errno);
}

int run_job_or_throw(const LaunchOptions& options) {
  // First, before the launcher opens anything of its own.
  const std::vector<FdRange> private_fds = fds_not_inherited(open_fds_above_stderr());
  std::string program_path;
  try {
    program_path = find_program(options.command.front());
  } catch (const Error& error) {
    print_error(std::string("cannot run the program: ") + error.what());
    return kExitNotFound;
  }

  if (options.tag_output) ensure_descriptor_limit(options.ranks);

  // Before any thread exists (the embedded store starts threads): the mask is inherited.
  LauncherSignals signals;
  JobIdentity identity;
  identity.job_id = make_job_id();
  // Always a new one, even if the caller set MEMLOOM_JOB_SECRET: the job id is new too, and the
  // secret only has to be shared by this run's ranks.
  identity.job_secret = make_job_secret();
  identity.devices_per_node = options.devices_per_node;
  // Destruction order is the cleanup order: ranks (supervisor), store, /dev/shm, directory.
  RuntimeDirectory runtime_dir(runtime_parent_directory(), identity.job_id);
  identity.runtime_dir = runtime_dir.path();
  // Still single-threaded here, as the reaper's fork needs. It removes the directory and the
  // job's /dev/shm entries if the launcher is killed outright (SIGKILL runs no destructor); on a
  // normal end the safety net below reports and removes them first.
  CleanupReaper reaper(runtime_dir.path(), shm_prefix(identity.job_id));
  ShmSafetyNet shm_safety_net(identity.job_id);

  std::unique_ptr<store::Server> embedded_store;
  if (options.store_url.empty()) {
    store::ServerOptions store_options;
    store_options.listen_url = "tcp://127.0.0.1:0";
    embedded_store = store::Server::start(store_options);
    identity.store_url = embedded_store->url();
  } else {
    identity.store_url = options.store_url;
  }

  JobOutcome outcome;
  {
    JobSupervisor supervisor(options, identity, program_path, signals, private_fds);
    outcome = supervisor.run();
  }
  if (!outcome.report.empty()) print_error(outcome.report);
  if (!runtime_dir.remove()) {
    print_error("could not remove the runtime directory " + runtime_dir.path());
  }
  return outcome.exit_code;
}

}  // namespace

int run_job(const LaunchOptions& options) {
  try {
    return run_job_or_throw(options);
  } catch (const Error& error) {
    print_error(std::string(status_name(error.status())) + ": " + error.what());
  } catch (const std::exception& error) {
    print_error(std::string("unexpected error: ") + error.what());
  }
  return kExitLauncherFailed;
}

}  // namespace memloom::sim
