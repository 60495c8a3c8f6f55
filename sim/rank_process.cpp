#include "sim/rank_process.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "sim/exit_codes.h"

namespace memloom::sim {
namespace {

// Closes a pipe pair on scope exit unless released.
struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() = default;
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (read_end >= 0) ::close(read_end);
    if (write_end >= 0) ::close(write_end);
  }
  void open(const char* what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) raise_errno(std::string("cannot create ") + what, errno);
    read_end = fds[0];
    write_end = fds[1];
  }
  int release_read() {
    int fd = read_end;
    read_end = -1;
    return fd;
  }
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void exec_child(pid_t launcher, const RankSpawnRequest& request, char* const* argv,
                             char* const* envp, int stdout_write, int stderr_write,
                             int error_write) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before prctl took effect; then nobody would kill us later.
  if (::getppid() != launcher) ::_exit(kExitLauncherFailed);

  // Handlers are reset by execve, but ignored signals and the mask would be inherited.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &default_action, nullptr);
  ::sigprocmask(SIG_SETMASK, &request.child_signal_mask, nullptr);

  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0 && null_fd != STDIN_FILENO) {
    ::dup2(null_fd, STDIN_FILENO);
    ::close(null_fd);
  }
  if (request.capture_output) {
    ::dup2(stdout_write, STDOUT_FILENO);
    ::dup2(stderr_write, STDERR_FILENO);
  }
  mark_close_on_exec(request.close_on_exec, request.max_fd);
  ::execve(request.program_path.c_str(), argv, envp);
  int error = errno;
  ssize_t ignored = ::write(error_write, &error, sizeof(error));
  (void)ignored;
  ::_exit(kExitNotFound);
}

// Waits (bounded) for the child to exec: the error pipe closes on a successful execve and
// carries errno when it fails.
std::string read_exec_error(int error_read) {
  const Deadline deadline = Deadline::after(std::chrono::seconds(10));
  int error = 0;
  size_t got = 0;
  while (got < sizeof(error) && !deadline.expired()) {
    pollfd pfd{error_read, POLLIN, 0};
    int ready = ::poll(&pfd, 1, deadline.poll_timeout_ms(1000));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = ::read(error_read, reinterpret_cast<char*>(&error) + got, sizeof(error) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: execve succeeded
    got += static_cast<size_t>(n);
  }
  if (got < sizeof(error)) return "";
  char buffer[256];
  return std::string("cannot execute: ") + ::strerror_r(error, buffer, sizeof(buffer));
}

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::unique_ptr<RankProcess> RankProcess::spawn(const RankSpawnRequest& request) {
  MEMLOOM_CHECK_ARG(!request.program_path.empty() && !request.argv.empty(),
                    "a rank needs a program and argv[0]");
  const std::string rank_text = "rank " + std::to_string(request.rank);
  Pipe out, err, exec_error;
  if (request.capture_output) {
    out.open("the stdout pipe of a rank");
    err.open("the stderr pipe of a rank");
  }
  exec_error.open("the exec status pipe of a rank");
  // Everything the child needs is built before fork: it must not allocate afterwards.
  std::vector<char*> argv = c_strings(request.argv);
  std::vector<char*> envp = c_strings(request.environment);
  const pid_t launcher = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) raise_errno("cannot fork " + rank_text, errno);
  if (pid == 0) {
    exec_child(launcher, request, argv.data(), envp.data(), out.write_end, err.write_end,
               exec_error.write_end);
  }
  // Also set the group here: the launcher may signal the group before the child runs setpgid.
  // EACCES means the child already exec'd, after having set it itself.
  ::setpgid(pid, pid);

  std::unique_ptr<RankProcess> process(new RankProcess());
  process->rank_ = request.rank;
  process->pid_ = pid;
  process->running_ = true;
  ::close(exec_error.write_end);
  exec_error.write_end = -1;
  process->exec_error_ = read_exec_error(exec_error.read_end);
  if (request.capture_output) {
    ::close(out.write_end);
    out.write_end = -1;
    ::close(err.write_end);
    err.write_end = -1;
    process->stdout_fd_ = out.release_read();
    process->stderr_fd_ = err.release_read();
    // Non-blocking reads let the launcher drain whatever is there without stalling.
    ::fcntl(process->stdout_fd_, F_SETFL, O_NONBLOCK);
    ::fcntl(process->stderr_fd_, F_SETFL, O_NONBLOCK);
  }
  return process;
}

RankProcess::~RankProcess() {
  if (running_) {
    signal_group(SIGKILL);
    // SIGKILL cannot be caught, so this normally ends at once; a process stuck in the kernel
    // is left to init rather than hanging the launcher.
    const Deadline deadline = Deadline::after(std::chrono::seconds(5));
    while (!try_reap() && !deadline.expired()) ::usleep(2000);
  }
  close_stdout();
  close_stderr();
}

bool RankProcess::try_reap() {
  if (!running_) return false;
  int status = 0;
  pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done != pid_) return false;
  wait_status_ = status;
  running_ = false;
  return true;
}

void RankProcess::signal_group(int sig) const {
  if (pid_ <= 0) return;
  // Until the child's own setpgid runs, the group may not exist yet: signal the pid as well.
  if (::kill(-pid_, sig) != 0 && running_) ::kill(pid_, sig);
}

void RankProcess::close_stdout() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

void RankProcess::close_stderr() {
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
  stderr_fd_ = -1;
}

std::string find_program(const std::string& name) {
  if (name.empty()) raise(Status::kNotFound, "the program name is empty");
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) {
      raise(Status::kNotFound, "'" + name + "' is not an executable file");
    }
    return name;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = (path_env != nullptr && path_env[0] != '\0') ? path_env : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string directory = path.substr(start, end - start);
    if (directory.empty()) directory = ".";  // an empty PATH entry means the current directory
    std::string candidate = directory + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  raise(Status::kNotFound, "'" + name + "' was not found in PATH");
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
  return kExitLauncherFailed;
}

}  // namespace memloom::sim
