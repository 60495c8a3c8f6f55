#include "tests/support/multi_process.h"

#include <dirent.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/store/server.h"

namespace memloom::testing {

int RankContext::device() const {
  const int devices = core::platform().device_count();
  return devices > 0 ? local_rank % devices : 0;
}
namespace {

// MEMLOOM_TEST_STACKS_ON_TIMEOUT=1: a rank that outlives its test's timeout has every thread's
// stack printed (gdb, at most 30 s) before it is killed, so a hang seen once on a machine that
// is gone afterwards (a lent GPU host) can still be understood.
void print_stacks_if_asked(int rank, pid_t pid) {
  const char* asked = std::getenv("MEMLOOM_TEST_STACKS_ON_TIMEOUT");
  if (asked == nullptr || std::string(asked) != "1") return;
  std::fprintf(stderr, "---- rank %d (pid %d) timed out; its threads:\n", rank,
               static_cast<int>(pid));
  const std::string command =
      "timeout 30 gdb -p " + std::to_string(pid) +
      " -batch -ex 'thread apply all bt 25' 2>&1 | grep -E '^(#|Thread)' >&2";
  if (std::system(command.c_str()) == 0) return;
  // Without gdb: SIGABRT makes the rank print the stack of the thread that takes it (usually the
  // main thread, where a test waits), see install_crash_backtraces.
  std::fprintf(stderr, "(gdb could not attach; asking the rank for its main stack)\n");
  ::kill(pid, SIGABRT);
  for (int waited_ms = 0; waited_ms < 2000; waited_ms += 10) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// MEMLOOM_TEST_TIMEOUT_SCALE=F (1 to 10): every job's kill timeout times F. The timeout guards
// against hangs, it judges no speed; on a loaded GPU machine (12 multi-rank tests at once on 2
// GPUs) HIERARCHY tests that take 3 s alone ran 40-50 s of their 60.
std::chrono::milliseconds scaled_timeout(std::chrono::milliseconds timeout) {
  const char* asked = std::getenv("MEMLOOM_TEST_TIMEOUT_SCALE");
  if (asked == nullptr) return timeout;
  char* end = nullptr;
  const double scale = std::strtod(asked, &end);
  if (end == asked || *end != '\0' || !(scale >= 1.0 && scale <= 10.0)) {
    std::fprintf(stderr, "MEMLOOM_TEST_TIMEOUT_SCALE=%s ignored (a number from 1 to 10)\n", asked);
    return timeout;
  }
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(timeout.count()) * scale));
}

// Every job id this process handed out: leftover_shm_entries() looks for these only, so that tests
// running at the same time (ctest -j) do not see each other's entries.
std::vector<std::string>& job_ids_made_here() {
  static std::vector<std::string> ids;
  return ids;
}

std::string make_job_id() {
  std::random_device random;
  std::ostringstream out;
  out << "t" << getpid() << "x" << std::hex << random();
  job_ids_made_here().push_back(out.str());
  return out.str();
}

// Runs the store server in a child process so the parent stays single-threaded before it forks
// the ranks. Returns the child's pid and writes the store URL.
pid_t start_store_process(std::string* url) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      store::ServerOptions options;
      options.listen_url = "tcp://127.0.0.1:0";
      auto server = store::Server::start(options);
      std::string address = server->url() + "\n";
      if (::write(pipe_fds[1], address.data(), address.size()) < 0) ::_exit(3);
      ::close(pipe_fds[1]);
      while (true) ::pause();  // killed by the parent when the test ends
    } catch (const std::exception& error) {
      std::fprintf(stderr, "test store failed to start: %s\n", error.what());
      ::_exit(3);
    }
  }
  ::close(pipe_fds[1]);
  std::string line;
  char c;
  while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(pipe_fds[0]);
  if (line.empty()) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("the test store did not start");
  }
  *url = line;
  return pid;
}

// A rank that crashes prints where (function names from shared libraries, addresses elsewhere):
// a crash on a machine that is gone afterwards (a lent GPU host) can still be located.
[[maybe_unused]] void print_backtrace_and_die(int signal_number) {
  void* frames[64];
  const int depth = ::backtrace(frames, 64);
  char line[96];
  const int length = std::snprintf(line, sizeof(line), "---- rank pid %d: signal %d; backtrace:\n",
                                   static_cast<int>(::getpid()), signal_number);
  if (length > 0) (void)!::write(STDERR_FILENO, line, static_cast<size_t>(length));
  ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  ::raise(signal_number);  // SA_RESETHAND: the default action now, so the parent sees the signal
}

void install_crash_backtraces() {
  // Under a sanitizer its own report is better: its handlers stay.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  void* warm_up[1];
  ::backtrace(warm_up, 1);  // loads the unwinder now: the handler must not allocate
  struct sigaction action {};
  action.sa_handler = print_backtrace_and_die;
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int signal_number : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    ::sigaction(signal_number, &action, nullptr);
  }
#endif
}

[[noreturn]] void run_child(const RankContext& context, const MultiProcessOptions& opts,
                            const std::function<void(const RankContext&)>& body) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test process
  install_crash_backtraces();
  ::setenv("MEMLOOM_RANK", std::to_string(context.rank).c_str(), 1);
  ::setenv("MEMLOOM_WORLD_SIZE", std::to_string(context.world_size).c_str(), 1);
  ::setenv("MEMLOOM_LOCAL_RANK", std::to_string(context.local_rank).c_str(), 1);
  ::setenv("MEMLOOM_LOCAL_SIZE", std::to_string(context.local_size).c_str(), 1);
  ::setenv("MEMLOOM_NODE", context.node.c_str(), 1);
  ::setenv("MEMLOOM_JOB_ID", context.job_id.c_str(), 1);
  if (!context.store_url.empty()) ::setenv("MEMLOOM_STORE_URL", context.store_url.c_str(), 1);
  for (const auto& [key, value] : opts.env) ::setenv(key.c_str(), value.c_str(), 1);
  int code = 0;
  try {
    body(context);
    if (::testing::Test::HasFailure()) code = 1;
  } catch (const memloom::Error& error) {
    std::fprintf(stderr, "[rank %d] memloom::Error (%s): %s\n", context.rank,
                 status_name(error.status()), error.what());
    code = 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "[rank %d] exception: %s\n", context.rank, error.what());
    code = 3;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // _exit: the child must not run the parent's atexit handlers or gtest's reporting.
  ::_exit(code);
}

}  // namespace

std::vector<RankResult> run_ranks(const MultiProcessOptions& opts,
                                  const std::function<void(const RankContext&)>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const std::string job_id = make_job_id();
  std::string store_url = opts.store_url;
  pid_t store_pid = -1;
  if (store_url.empty() && opts.start_store) store_pid = start_store_process(&store_url);

  std::vector<pid_t> pids(opts.ranks, -1);
  for (int rank = 0; rank < opts.ranks; ++rank) {
    RankContext context;
    context.rank = rank;
    context.world_size = opts.ranks;
    context.node_index = static_cast<int>(static_cast<long>(rank) * opts.nodes / opts.ranks);
    int first = -1, count = 0;
    for (int r = 0; r < opts.ranks; ++r) {
      if (static_cast<int>(static_cast<long>(r) * opts.nodes / opts.ranks) == context.node_index) {
        if (first < 0) first = r;
        ++count;
      }
    }
    context.local_rank = rank - first;
    context.local_size = count;
    context.node = job_id + "-node" + std::to_string(context.node_index);
    context.store_url = store_url;
    context.job_id = job_id;
    pid_t pid = ::fork();
    if (pid == 0) run_child(context, opts, body);
    pids[rank] = pid;
  }

  std::vector<RankResult> results(opts.ranks);
  const auto deadline = std::chrono::steady_clock::now() + scaled_timeout(opts.timeout);
  int remaining = opts.ranks;
  while (remaining > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int rank = 0; rank < opts.ranks; ++rank) {
        if (pids[rank] != pid) continue;
        results[rank].rank = rank;
        if (WIFEXITED(status)) results[rank].exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) results[rank].signal = WTERMSIG(status);
        pids[rank] = -1;
        --remaining;
      }
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (int rank = 0; rank < opts.ranks; ++rank) {
        if (pids[rank] <= 0) continue;
        print_stacks_if_asked(rank, pids[rank]);
        ::kill(pids[rank], SIGKILL);
        ::waitpid(pids[rank], nullptr, 0);
        results[rank] = RankResult{rank, -1, SIGKILL, true};
        pids[rank] = -1;
        --remaining;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (store_pid > 0) {
    ::kill(store_pid, SIGKILL);
    ::waitpid(store_pid, nullptr, 0);
  }
  return results;
}

bool all_passed(const std::vector<RankResult>& results) {
  for (const auto& r : results) {
    if (r.exit_code != 0 || r.signal != 0 || r.timed_out) return false;
  }
  return true;
}

std::string describe(const std::vector<RankResult>& results) {
  std::ostringstream out;
  for (const auto& r : results) {
    out << "rank " << r.rank << ": ";
    if (r.timed_out)
      out << "timed out (killed)";
    else if (r.signal != 0)
      out << "killed by signal " << r.signal;
    else
      out << "exit " << r.exit_code;
    out << "\n";
  }
  return out.str();
}

std::vector<std::string> leftover_shm_entries() {
  std::vector<std::string> names;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind("memloom", 0) != 0) continue;
    for (const std::string& job : job_ids_made_here()) {
      if (name.find(job) != std::string::npos) {
        names.push_back(name);
        break;
      }
    }
  }
  ::closedir(dir);
  return names;
}

}  // namespace memloom::testing
