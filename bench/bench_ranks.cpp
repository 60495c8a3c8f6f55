#include "bench/bench_ranks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hw/host/wait_policy.h"
#include "src/store/server.h"
#include "wholememory/wholememory.h"

namespace memloom::bench {
namespace {

constexpr auto kSetupTimeout = std::chrono::seconds(120);

// Sleeps until `word` no longer holds `seen`, on a futex shared by the ranks' processes: a rank
// waiting at the barrier while another times its transfers sleeps, instead of waking thousands of
// times a second beside the timed work (a serving rank waits there throughout).
void wait_while(std::atomic<uint32_t>& word, uint32_t seen, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kSetupTimeout;
  while (word.load() == seen) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(std::string("timed out waiting for ") + what);
    }
    host::futex_wait(&word, seen, 100'000'000);  // the deadline is checked between slices
  }
}

std::string make_job_id() {
  std::random_device random;
  char text[64];
  std::snprintf(text, sizeof(text), "bench%dx%08x", static_cast<int>(::getpid()), random());
  return text;
}

// The config store runs in its own process so the parent stays single-threaded for the forks.
pid_t start_store_process(std::string* url) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe for the store process failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork of the store process failed");
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      store::ServerOptions options;
      options.listen_url = "tcp://127.0.0.1:0";
      auto server = store::Server::start(options);
      std::string line = server->url() + "\n";
      if (::write(fds[1], line.data(), line.size()) < 0) ::_exit(3);
      ::close(fds[1]);
      while (true) ::pause();  // killed by the parent when the job ends
    } catch (const std::exception& error) {
      std::fprintf(stderr, "memloom-bench: the config store did not start: %s\n", error.what());
      ::_exit(3);
    }
  }
  ::close(fds[1]);
  std::string line;
  char c = 0;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(fds[0]);
  if (line.empty()) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("the config store process did not start");
  }
  *url = line;
  return pid;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Figures travel as "name\tvalue\n" lines; a failure as "!\tmessage\n".
[[noreturn]] void run_child(const RankInfo& info, const std::string& node, const std::string& job,
                            int out, const std::function<Figures(const RankInfo&)>& body) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive memloom-bench
  ::setenv("MEMLOOM_RANK", std::to_string(info.rank).c_str(), 1);
  ::setenv("MEMLOOM_WORLD_SIZE", std::to_string(info.world_size).c_str(), 1);
  ::setenv("MEMLOOM_LOCAL_RANK", std::to_string(info.local_rank).c_str(), 1);
  ::setenv("MEMLOOM_DEVICE", std::to_string(info.device).c_str(), 1);
  ::setenv("MEMLOOM_NODE", node.c_str(), 1);
  ::setenv("MEMLOOM_JOB_ID", job.c_str(), 1);
  ::setenv("MEMLOOM_STORE_URL", info.store_url.c_str(), 1);
  int code = 0;
  std::string text;
  try {
    for (const auto& [name, value] : body(info)) {
      char number[64];
      std::snprintf(number, sizeof(number), "%.9g", value);
      text += name + "\t" + number + "\n";
    }
  } catch (const std::exception& error) {
    std::string message = error.what();
    for (char& c : message) c = c == '\n' ? ' ' : c;
    text = "!\t" + message + "\n";
    code = 1;
  }
  write_all(out, text);
  ::close(out);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);  // not the parent's atexit handlers
}

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's figures pipe
  std::string text;
};

void parse_figures(int rank, const std::string& text, Figures* figures, std::string* failure) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string name = line.substr(0, tab), value = line.substr(tab + 1);
    if (name == "!") {
      *failure += "rank " + std::to_string(rank) + ": " + value + "\n";
    } else {
      (*figures)[name] = std::strtod(value.c_str(), nullptr);
    }
  }
}

}  // namespace

void RankRendezvous::barrier(int world_size) {
  const uint32_t generation = generation_.load();
  if (arrived_.fetch_add(1) + 1 == static_cast<uint32_t>(world_size)) {
    arrived_.store(0);
    generation_.fetch_add(1);
    host::futex_wake_all(&generation_);
    return;
  }
  wait_while(generation_, generation, "the other ranks (set-up barrier)");
}

void RankRendezvous::publish(int mailbox, uint64_t value) {
  values_[mailbox].store(value);
  posted_[mailbox].store(1);
  host::futex_wake_all(&posted_[mailbox]);
}

uint64_t RankRendezvous::wait_for(int mailbox) {
  wait_while(posted_[mailbox], 0, "a value from another rank");
  return values_[mailbox].load();
}

Figures run_ranks(const RankJob& job, const std::function<Figures(const RankInfo&)>& body) {
  if (job.ranks < 1 || job.nodes < 1 || job.nodes > job.ranks) {
    throw std::runtime_error("a rank job needs at least one rank per node");
  }
  std::fflush(stdout);
  std::fflush(stderr);
  void* area = ::mmap(nullptr, sizeof(RankRendezvous), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) throw std::runtime_error("cannot map the rendezvous area");
  auto* rendezvous = new (area) RankRendezvous();
  struct Unmap {
    void* area;
    ~Unmap() { ::munmap(area, sizeof(RankRendezvous)); }
  } unmap{area};

  const std::string job_id = make_job_id();
  std::string store_url;
  pid_t store = start_store_process(&store_url);
  // Counted in a child of its own, as the backend must not start before the ranks are forked.
  // More ranks than GPUs on a node share them, as memloom-run deals them.
  static const int devices = std::max(1, fork_get_device_count());
  std::vector<Child> children(static_cast<size_t>(job.ranks));
  auto node_of = [&](int rank) { return static_cast<int>(long(rank) * job.nodes / job.ranks); };
  for (int rank = 0; rank < job.ranks; ++rank) {
    RankInfo info;
    info.rank = rank;
    info.world_size = job.ranks;
    info.node_index = node_of(rank);
    int first = rank;
    while (first > 0 && node_of(first - 1) == info.node_index) --first;
    info.local_rank = rank - first;
    info.device = info.local_rank % devices;
    info.store_url = store_url;
    info.rendezvous = rendezvous;
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe for a rank failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      for (int r = 0; r < rank; ++r) ::close(children[static_cast<size_t>(r)].out);
      run_child(info, job_id + "-node" + std::to_string(info.node_index), job_id, fds[1], body);
    }
    ::close(fds[1]);
    children[static_cast<size_t>(rank)] = Child{pid, fds[0], ""};
  }

  const auto deadline = std::chrono::steady_clock::now() + job.timeout;
  bool timed_out = false;
  while (true) {
    std::vector<pollfd> open;
    for (const Child& child : children) {
      if (child.out >= 0) open.push_back(pollfd{child.out, POLLIN, 0});
    }
    if (open.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      break;
    }
    if (::poll(open.data(), open.size(), 100) < 0 && errno != EINTR) break;
    for (Child& child : children) {
      if (child.out < 0) continue;
      pollfd probe{child.out, POLLIN, 0};
      if (::poll(&probe, 1, 0) <= 0) continue;
      char buffer[4096];
      ssize_t n = ::read(child.out, buffer, sizeof(buffer));
      if (n > 0) {
        child.text.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(child.out);
        child.out = -1;
      }
    }
  }

  Figures figures;
  std::string failure;
  for (size_t rank = 0; rank < children.size(); ++rank) {
    Child& child = children[rank];
    if (child.out >= 0) ::close(child.out);
    if (timed_out) ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    parse_figures(static_cast<int>(rank), child.text, &figures, &failure);
    if (timed_out) {
      failure += "rank " + std::to_string(rank) + ": killed after " +
                 std::to_string(job.timeout.count()) + " s\n";
    } else if (WIFSIGNALED(status)) {
      failure += "rank " + std::to_string(rank) + ": killed by signal " +
                 std::to_string(WTERMSIG(status)) + "\n";
    } else if (WEXITSTATUS(status) != 0 && child.text.find("!\t") == std::string::npos) {
      failure += "rank " + std::to_string(rank) + ": exit code " +
                 std::to_string(WEXITSTATUS(status)) + "\n";
    }
  }
  ::kill(store, SIGKILL);
  ::waitpid(store, nullptr, 0);
  if (!failure.empty()) throw std::runtime_error(failure);
  return figures;
}

std::string free_loopback_address() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

}  // namespace memloom::bench
