#include "tests/etcd/etcd_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "memloom/deadline.h"
#include "src/store/etcd_http.h"

namespace memloom::store::testing {
namespace {

// A port the kernel says is free now (the member binds it a moment later).
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("no free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string loopback(uint16_t port, const char* scheme = "http") {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
}

}  // namespace

EtcdCluster::EtcdCluster(int members, std::optional<EtcdServerTls> tls)
    : tls_(std::move(tls)),
      client_tls_(tls_ ? etcd::make_etcd_tls(TlsSetting::use(tls_->client)) : nullptr),
      owner_(::getpid()) {
  // In memory: etcd syncs its log to disk on every write, which on a shared CI disk would make
  // the tests measure the disk. The "memloom" name lets CI's /dev/shm check catch a leftover.
  char pattern[] = "/dev/shm/memloom-etcd-test-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("cannot create a temp directory");
  directory_ = pattern;
  token_ =
      "memloom-test-" + std::to_string(::getpid()) + "-" + directory_.substr(directory_.size() - 6);
  members_.resize(static_cast<size_t>(members));
  for (int i = 0; i < members; ++i) {
    Member& member = members_[static_cast<size_t>(i)];
    member.name = "m" + std::to_string(i);
    member.client_port = free_port();
    member.peer_port = free_port();
    initial_cluster_ += (i ? "," : "") + member.name + "=" + loopback(member.peer_port);
  }
  for (int i = 0; i < members; ++i) spawn(i, true);
  try {
    wait_ready(std::chrono::seconds(30));
  } catch (const std::exception& error) {
    std::string log = logs();
    stop_all();
    throw std::runtime_error(std::string("etcd did not come up: ") + error.what() + "\n" + log);
  }
}

EtcdCluster::~EtcdCluster() {
  stop_all();
}

void EtcdCluster::stop_all() {
  // A forked rank that leaves through exit() must not take the parent's servers with it.
  if (::getpid() != owner_) return;
  for (Member& member : members_) {
    if (member.pid <= 0) continue;
    ::kill(-member.pid, SIGKILL);
    ::waitpid(member.pid, nullptr, 0);
    member.pid = -1;
  }
  if (!directory_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
    directory_.clear();
  }
}

void EtcdCluster::spawn(int index, bool initial) {
  Member& member = members_[static_cast<size_t>(index)];
  std::string data = directory_ + "/" + member.name;
  std::string log = directory_ + "/" + member.name + ".log";
  const char* client_scheme = tls_ ? "https" : "http";
  std::vector<std::string> args = {
      "etcd", "--name", member.name, "--data-dir", data, "--listen-client-urls",
      loopback(member.client_port, client_scheme), "--advertise-client-urls",
      loopback(member.client_port, client_scheme), "--listen-peer-urls", loopback(member.peer_port),
      "--initial-advertise-peer-urls", loopback(member.peer_port), "--initial-cluster",
      initial_cluster_, "--initial-cluster-token", token_, "--initial-cluster-state",
      initial ? "new" : "existing",
      // Quick elections (and so a 1 s least lease TTL) and room for the 8 MiB values of the
      // conformance suite (base64 in JSON: about 11 MiB a request).
      "--heartbeat-interval", "50", "--election-timeout", "500", "--max-request-bytes",
      std::to_string(32 << 20), "--logger", "zap", "--log-level", "warn"};
  if (tls_) {
    args.insert(args.end(), {"--cert-file", tls_->cert_file, "--key-file", tls_->key_file,
                             "--trusted-ca-file", tls_->ca_file, "--client-cert-auth"});
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot fork etcd");
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execvp("etcd", argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  member.pid = pid;
}

std::string EtcdCluster::url() const {
  std::string out = "etcd://";
  for (size_t i = 0; i < members_.size(); ++i)
    out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(members_[i].client_port);
  return out;
}

std::string EtcdCluster::member_url(int member) const {
  return "etcd://127.0.0.1:" + std::to_string(members_[static_cast<size_t>(member)].client_port);
}

void EtcdCluster::kill(int index) {
  Member& member = members_[static_cast<size_t>(index)];
  if (member.pid <= 0) return;
  ::kill(-member.pid, SIGKILL);
  ::waitpid(member.pid, nullptr, 0);
  member.pid = -1;
}

void EtcdCluster::signal(int index, int signal_number) {
  const pid_t pid = members_[static_cast<size_t>(index)].pid;
  ::kill(-pid, signal_number);
  if (signal_number != SIGSTOP) return;
  // Delivery is asynchronous: a request sent right after kill() could still be served. Wait
  // (at most 2 s) until the kernel reports the member stopped ('T' in /proc/PID/stat).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T') return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void EtcdCluster::restart(int index) {
  if (members_[static_cast<size_t>(index)].pid > 0) return;
  spawn(index, false);
}

void EtcdCluster::wait_ready(std::chrono::milliseconds timeout) const {
  Deadline deadline = Deadline::after(timeout);
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].pid <= 0) continue;
    etcd::EtcdHttp http({EtcdEndpoint{"127.0.0.1", members_[i].client_port}}, client_tls_);
    while (true) {
      try {
        // A write needs a leader and a quorum, as the tests' calls do.
        http.call("/v3/kv/put", "{\"key\":\"cmVhZHk=\"}", Deadline::after(std::chrono::seconds(2)),
                  "readiness check");
        break;
      } catch (const std::exception& error) {
        if (deadline.expired()) throw std::runtime_error(error.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
}

std::string EtcdCluster::logs() const {
  std::ostringstream out;
  for (const Member& member : members_) {
    std::ifstream log(directory_ + "/" + member.name + ".log");
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(log, line)) lines.push_back(line);
    out << "--- etcd " << member.name << " (last lines)\n";
    for (size_t i = lines.size() > 20 ? lines.size() - 20 : 0; i < lines.size(); ++i)
      out << lines[i] << "\n";
  }
  return out.str();
}

}  // namespace memloom::store::testing
