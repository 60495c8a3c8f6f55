#include "tests/sim/launcher_harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace memloom::sim::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> build_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    if (extra.count(text.substr(0, text.find('='))) == 0) entries.push_back(text);
  }
  for (const auto& [name, value] : extra) entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The value after "key=" in a whitespace-separated line, "" if absent.
std::string token(const std::string& line, const std::string& key) {
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

LauncherRun run_memloom_run(const std::vector<std::string>& args,
                            const LauncherRunOptions& options) {
  std::vector<std::string> argv_strings{MEMLOOM_RUN_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = build_environment(options.env);
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  const pid_t test_pid = ::getpid();
  const Clock::time_point start = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashing test takes the launcher with it
    if (::getppid() != test_pid) ::_exit(120);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    // The test's own descriptors (a store server's sockets) are not the launcher's business.
    ::syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
    if (options.inherited_fd >= 3) {
      int null_fd = ::open("/dev/null", O_RDONLY);
      ::dup2(null_fd, options.inherited_fd);  // dup2 leaves the new descriptor without CLOEXEC
      if (null_fd != options.inherited_fd) ::close(null_fd);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(121);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  LauncherRun run;
  const Clock::time_point deadline = start + options.timeout;
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool open[2] = {true, true};
  bool exited = false;
  Clock::time_point exited_at{};
  int status = 0;
  while (open[0] || open[1] || !exited) {
    if (!exited) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        exited = true;
        exited_at = Clock::now();
        run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      }
    }
    if (Clock::now() >= deadline && !run.timed_out) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
    }
    pollfd pfds[2];
    nfds_t count = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      pfds[count] = pollfd{fds[i], POLLIN, 0};
      which[count++] = i;
    }
    if (count == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    int ready = ::poll(pfds, count, 20);
    for (nfds_t k = 0; ready > 0 && k < count; ++k) {
      if (pfds[k].revents == 0) continue;
      int i = which[k];
      char buffer[65536];
      ssize_t n = ::read(fds[i], buffer, sizeof(buffer));
      if (n > 0) {
        (i == 0 ? run.out : run.err).append(buffer, static_cast<size_t>(n));
        if (i == 0 && options.on_stdout) options.on_stdout(pid, run.out);
      } else if (n == 0 || errno != EINTR) {
        open[i] = false;
      }
    }
    // Descendants that outlive memloom-run could hold the pipes open: stop listening then.
    if (exited && Clock::now() >= exited_at + std::chrono::seconds(2)) break;
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> rank_lines(const std::string& text, int rank) {
  const std::string tag = "[rank " + std::to_string(rank) + "] ";
  std::vector<std::string> lines;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind(tag, 0) == 0) lines.push_back(line.substr(tag.size()));
  }
  return lines;
}

std::vector<RankAnnouncement> announcements(const LauncherRun& run) {
  std::vector<RankAnnouncement> result;
  for (const std::string& line : lines_of(run.out)) {
    if (line.find("info pid=") == std::string::npos) continue;
    RankAnnouncement announcement;
    announcement.pid = static_cast<pid_t>(std::stol(token(line, "pid")));
    announcement.job_id = token(line, "job");
    announcement.runtime_dir = token(line, "dir");
    result.push_back(announcement);
  }
  return result;
}

std::vector<pid_t> announced_children(const LauncherRun& run) {
  std::vector<pid_t> children;
  for (const std::string& line : lines_of(run.out)) {
    std::string child = token(line, "child");
    if (!child.empty()) children.push_back(static_cast<pid_t>(std::stol(child)));
  }
  return children;
}

bool process_ended(pid_t pid, std::chrono::milliseconds wait) {
  const Clock::time_point deadline = Clock::now() + wait;
  while (true) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    // A zombie no longer runs; only its parent (init here) can make it disappear.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string content;
    std::getline(stat, content);
    size_t close = content.rfind(')');
    if (close != std::string::npos && close + 2 < content.size()) {
      char state = content[close + 2];
      if (state == 'Z' || state == 'X') return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::string> shm_entries(const std::string& prefix) {
  std::vector<std::string> entries;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) entries.push_back(name);
  }
  return entries;
}

void expect_job_cleaned_up(const LauncherRun& run, size_t expected_ranks) {
  std::vector<RankAnnouncement> ranks = announcements(run);
  EXPECT_GE(ranks.size(), expected_ranks) << "stdout:\n" << run.out << "stderr:\n" << run.err;
  std::set<std::string> jobs;
  for (const RankAnnouncement& rank : ranks) {
    EXPECT_TRUE(process_ended(rank.pid, std::chrono::seconds(2)))
        << "rank process " << rank.pid << " survived the job";
    EXPECT_FALSE(rank.runtime_dir.empty());
    EXPECT_FALSE(std::filesystem::exists(rank.runtime_dir))
        << "runtime directory " << rank.runtime_dir << " survived the job";
    jobs.insert(rank.job_id);
  }
  for (pid_t child : announced_children(run)) {
    EXPECT_TRUE(process_ended(child, std::chrono::seconds(2)))
        << "a rank's child " << child << " survived the job";
  }
  for (const std::string& job : jobs) {
    EXPECT_FALSE(job.empty());
    EXPECT_TRUE(shm_entries("memloom." + job).empty()) << "/dev/shm entries of " << job << " left";
  }
}

}  // namespace memloom::sim::testing
