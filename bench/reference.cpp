#include "bench/reference.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "bench/bench_timing.h"
#include "src/base/log.h"

namespace memloom::bench {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double memcpy_bandwidth(size_t bytes, int repetitions) {
  std::vector<char> source(bytes, 1), destination(bytes, 0);
  std::memcpy(destination.data(), source.data(), bytes);  // fault the pages in first
  std::vector<double> rates;
  for (int i = 0; i < repetitions; ++i) {
    double start = now_seconds();
    std::memcpy(destination.data(), source.data(), bytes);
    double elapsed = now_seconds() - start;
    // Keep the copy observable so it is not optimised away.
    asm volatile("" : : "r"(destination.data()) : "memory");
    rates.push_back(static_cast<double>(bytes) / std::max(elapsed, 1e-9));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

std::string format_rate(double bytes_per_second) {
  char text[64];
  if (bytes_per_second >= 1e9)
    std::snprintf(text, sizeof(text), "%.2f GB/s", bytes_per_second / 1e9);
  else if (bytes_per_second >= 1e6)
    std::snprintf(text, sizeof(text), "%.2f MB/s", bytes_per_second / 1e6);
  else
    std::snprintf(text, sizeof(text), "%.2f KB/s", bytes_per_second / 1e3);
  return text;
}

std::string format_bytes(size_t bytes) {
  char text[64];
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    std::snprintf(text, sizeof(text), "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof(text), "%zu KiB", bytes >> 10);
  else
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  return text;
}

void report(const std::string& name, double value, const std::string& unit, double reference,
            const std::string& reference_name) {
  double ratio = reference > 0 ? value / reference : 0.0;
  std::printf("%-48s %14.3f %-8s (%.2fx %s)\n", name.c_str(), value, unit.c_str(), ratio,
              reference_name.c_str());
  std::fflush(stdout);
}

namespace {

void set_socket_options(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval limit{60, 0};  // nothing waits forever, even if the peer process stalls
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
}

bool send_all(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool receive_all(int fd, char* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = ::recv(fd, data, bytes, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// The receiving process: takes messages of `bytes` and acknowledges each with one byte.
[[noreturn]] void tcp_receiver(int listener, size_t bytes) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  int fd = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  if (fd < 0) ::_exit(1);
  set_socket_options(fd);
  std::vector<char> buffer(bytes);
  const char ack = 1;
  while (receive_all(fd, buffer.data(), bytes) && send_all(fd, &ack, 1)) {
  }
  ::_exit(0);
}

}  // namespace

double tcp_stream_seconds(size_t bytes) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (listener >= 0) ::close(listener);
    throw std::runtime_error("raw TCP reference: cannot listen on loopback");
  }
  timeval accept_limit{60, 0};
  ::setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &accept_limit, sizeof(accept_limit));
  std::fflush(stdout);
  pid_t receiver = ::fork();
  if (receiver < 0) throw std::runtime_error("raw TCP reference: fork failed");
  if (receiver == 0) tcp_receiver(listener, bytes);
  ::close(listener);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), length) == 0;
  double seconds = 0;
  if (ok) {
    set_socket_options(fd);
    std::vector<char> message(bytes, 1);
    seconds = best_seconds_per_op([&] {
      char ack = 0;
      if (!ok) return;
      ok = send_all(fd, message.data(), bytes) && receive_all(fd, &ack, 1);
    });
  }
  if (fd >= 0) ::close(fd);
  ::kill(receiver, SIGKILL);
  ::waitpid(receiver, nullptr, 0);
  if (!ok) throw std::runtime_error("raw TCP reference: the loopback stream failed or stalled");
  return seconds;
}

std::optional<double> ReferenceRun::figure(const std::string& name) const {
  auto it = figures.find(name);
  if (!available || it == figures.end()) return std::nullopt;
  return it->second;
}

namespace {

std::string directory_of_this_program() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string text(path, static_cast<size_t>(n));
  return text.substr(0, text.rfind('/'));
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

ReferenceRun run_reference_program(Launcher launcher, const std::string& program, int ranks,
                                   const std::vector<std::string>& args, int timeout_seconds) {
  ReferenceRun run;
#ifdef MEMLOOM_BENCH_OSHRUN
  const std::string oshrun = MEMLOOM_BENCH_OSHRUN;
#else
  const std::string oshrun;
#endif
#ifdef MEMLOOM_BENCH_MPIRUN
  const std::string mpirun = MEMLOOM_BENCH_MPIRUN;
#else
  const std::string mpirun;
#endif
  const std::string& runner = launcher == Launcher::kOpenShmem ? oshrun : mpirun;
  const std::string path = directory_of_this_program() + "/" + program;
  if (runner.empty()) {
    run.why = launcher == Launcher::kOpenShmem
                  ? "not built: oshcc/oshrun missing or unusable at build time"
                  : "not built: mpicc/mpirun missing or unusable at build time";
    return run;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    run.why = program + " was not built";
    return run;
  }
  // --mca osc ^rdma: Debian's Open MPI 4.1 crashes in finalize (a memory hook of the osc/rdma
  // component) otherwise; nothing here uses one-sided MPI windows.
  std::string command = "timeout -k 5 " + std::to_string(timeout_seconds) + " " +
                        shell_quote(runner) + " --oversubscribe --mca osc ^rdma";
  if (::geteuid() == 0) command += " --allow-run-as-root";
  command += " -np " + std::to_string(ranks) + " " + shell_quote(path);
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  command += " 2>&1";
  std::fflush(stdout);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    run.why = "cannot start " + runner;
    return run;
  }
  std::string output, last_lines;
  char line[1024];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    char name[256], arg[256];
    double value = 0;
    if (std::sscanf(line, "%255s %255s %lf", name, arg, &value) == 3) {
      run.figures[std::string(name) + " " + arg] = value;
    } else {
      last_lines += line;
    }
  }
  int status = ::pclose(pipe);
  run.available = !run.figures.empty();
  if (!run.available) {
    std::string tail =
        last_lines.size() > 300 ? last_lines.substr(last_lines.size() - 300) : last_lines;
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    run.why =
        program + " under " + runner + " failed (status " + std::to_string(status) + "): " + tail;
  }
  return run;
}

namespace {

// What report_against printed last, for VerdictTally::add: the verdict line names its figures.
thread_local std::string t_last_missed, t_last_unavailable;
thread_local int t_figures_reported = 0;

}  // namespace

Verdict report_against(const std::string& name, double value, const std::string& unit,
                       std::optional<double> speedup, const std::string& reference_name,
                       std::optional<double> target, const std::string& why) {
  char target_text[64] = "";
  if (target) std::snprintf(target_text, sizeof(target_text), "target >= %.2fx", *target);
  Verdict verdict = Verdict::kNoTarget;
  if (!speedup) {
    std::printf("%-36s %10.3f %-5s  %-30s unavailable (%s)\n", name.c_str(), value, unit.c_str(),
                reference_name.c_str(), why.c_str());
    verdict = target ? Verdict::kUnavailable : Verdict::kNoTarget;
    t_last_unavailable = name + " (" + why + ")";
  } else {
    if (target) verdict = *speedup >= *target ? Verdict::kPass : Verdict::kMiss;
    const char* mark = verdict == Verdict::kPass ? "PASS" : verdict == Verdict::kMiss ? "MISS" : "";
    std::printf("%-36s %10.3f %-5s %7.2fx %-30s %-16s %s\n", name.c_str(), value, unit.c_str(),
                *speedup, reference_name.c_str(), target_text, mark);
    if (verdict == Verdict::kMiss) {
      char numbers[96];
      std::snprintf(numbers, sizeof(numbers), ": %.2fx of %s, %s", *speedup, reference_name.c_str(),
                    target_text);
      t_last_missed = name + numbers;
    }
  }
  std::fflush(stdout);
  ++t_figures_reported;
  MEMLOOM_LOG(kInfo, "memloom-bench: figure " << t_figures_reported << " done (" << name << ")");
  return verdict;
}

void VerdictTally::add(Verdict verdict) {
  if (verdict == Verdict::kPass) ++pass;
  if (verdict == Verdict::kMiss) {
    ++miss;
    missed.push_back(t_last_missed);
  }
  if (verdict == Verdict::kUnavailable) {
    ++unavailable;
    not_measured.push_back(t_last_unavailable);
  }
}

void VerdictTally::print(const std::string& benchmark) const {
  std::printf("\n%s targets: %d PASS, %d MISS, %d unavailable\n", benchmark.c_str(), pass, miss,
              unavailable);
  std::string verdict = benchmark + " verdict: ";
  if (miss == 0 && unavailable == 0) {
    verdict += pass > 0 ? "every target met (" + std::to_string(pass) + ")" : "no targets";
  } else {
    verdict += std::to_string(miss + unavailable) + " of " +
               std::to_string(pass + miss + unavailable) + " targets not met";
    for (const auto& name : missed) verdict += "; missed " + name;
    for (const auto& name : not_measured) verdict += "; unavailable: " + name;
  }
  std::printf("%s\n", verdict.c_str());
  std::fflush(stdout);
}

void report_heading(const std::string& text) {
  std::printf("\n== %s\n", text.c_str());
  std::fflush(stdout);
}

}  // namespace memloom::bench
