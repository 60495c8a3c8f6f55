// memloom-bench soak [--minutes N] [--ranks R]: R ranks (default 4, on two emulated nodes) repeat
// BM create / join / copy / leave / destroy for N minutes (default 10) and report, at the start,
// after the first round, every minute and at the end, their resident memory, open descriptors and
// the /dev/shm entries. Growth is measured against the soak's own early figures; the program fails
// when descriptors, /dev/shm entries or (beyond 5%) memory grew. Not part of CI: it takes minutes.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_registry.h"
#include "smem/host/smem_bm.h"
#include "src/store/client.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kDeviceSlot = 4ull << 20;
constexpr uint64_t kHostSlot = 1ull << 20;
constexpr size_t kCopyBytes = 1 << 20;

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

int count_entries(const char* path, const char* prefix = "") {
  int count = 0;
  if (DIR* dir = ::opendir(path)) {
    while (dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != ".." && name.rfind(prefix, 0) == 0) ++count;
    }
    ::closedir(dir);
  }
  return count;
}

int open_fds() {
  return count_entries("/proc/self/fd") - 1;
}  // minus the directory itself

// A barrier over the store for the ranks of one soak.
void store_barrier(memloom::store::Client& client, const std::string& key, int ranks) {
  client.add(key, 1);
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (client.add(key, 0) < ranks) {
    if (Clock::now() > end) throw std::runtime_error("soak barrier '" + key + "' timed out");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Report labels: minutes from 1 up, and these.
constexpr int kStart = 0;  // before the first round (cold)
constexpr int kWarm = -2;  // after the first round: the reference growth is measured against
constexpr int kEnd = -1;   // after the last round

// One BM round of every rank: create, join, write the next rank's device slot (on the other node
// for half of the ranks) and read it back, read the previous rank's host slot, leave, destroy.
// Returns false (and says why) on any failure.
bool run_round(memloom::store::Client& client, int rank, int ranks, long round,
               std::vector<char>& out, std::vector<char>& in) {
  smem_bm_t bm =
      smem_bm_create(static_cast<uint32_t>(round % 4), ranks,
                     static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP),
                     kHostSlot, kDeviceSlot, 0);
  if (bm == nullptr || smem_bm_join(bm, 0, nullptr) != SMEM_SUCCESS) {
    std::fprintf(stderr, "soak rank %d round %ld: create/join: %s\n", rank, round,
                 smem_get_last_err_msg());
    if (bm != nullptr) smem_bm_destroy(bm);
    return false;
  }
  store_barrier(client, "soak/joined/" + std::to_string(round), ranks);
  auto* next = static_cast<char*>(
      smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, static_cast<uint16_t>((rank + 1) % ranks)));
  auto* previous = static_cast<char*>(smem_bm_ptr_by_mem_type(
      bm, SMEM_MEM_TYPE_HOST, static_cast<uint16_t>((rank + ranks - 1) % ranks)));
  out.assign(kCopyBytes, static_cast<char>(round + rank));
  smem_copy_params write{out.data(), next, kCopyBytes};
  smem_copy_params read_back{next, in.data(), kCopyBytes};
  smem_copy_params read_host{previous, in.data(), kCopyBytes};
  bool ok = smem_bm_copy(bm, &write, SMEMB_COPY_H2G, 0) == SMEM_SUCCESS &&
            smem_bm_copy(bm, &read_back, SMEMB_COPY_G2H, 0) == SMEM_SUCCESS && in == out &&
            smem_bm_copy(bm, &read_host, SMEMB_COPY_GH2H, 0) == SMEM_SUCCESS;
  if (!ok) {
    std::fprintf(stderr, "soak rank %d round %ld: a copy failed or read back wrong bytes: %s\n",
                 rank, round, smem_get_last_err_msg());
  }
  // Nobody leaves while a peer may still copy into its memory.
  store_barrier(client, "soak/copied/" + std::to_string(round), ranks);
  ok = smem_bm_leave(bm, 0) == SMEM_SUCCESS && ok;
  smem_bm_destroy(bm);
  return ok;
}

// One rank: rounds until rank 0 says stop, with a report line to `out` at every mark.
int run_rank(int rank, int ranks, const std::string& url, int minutes, int out) {
  smem_bm_config_t config;
  smem_bm_config_init(&config);
  config.rankId = static_cast<uint16_t>(rank);
  config.autoRanking = false;
  config.initTimeout = config.createTimeout = config.controlOperationTimeout = 60;
  config.startConfigStoreServer = true;  // rank 0 hosts the store
  if (smem_bm_init(url.c_str(), ranks, static_cast<uint16_t>(rank % 2), &config) != SMEM_SUCCESS) {
    std::fprintf(stderr, "soak rank %d: smem_bm_init: %s\n", rank, smem_get_last_err_msg());
    return 2;
  }
  int status = 0;
  auto report = [&](int label, long rounds) {
    char line[160];
    const int n = std::snprintf(line, sizeof(line), "%d %d %ld %zu %d\n", rank, label, rounds,
                                resident_bytes(), open_fds());
    if (::write(out, line, static_cast<size_t>(n)) != n) status = 3;
  };
  auto client = memloom::store::Client::connect(url);
  std::vector<char> out_bytes(kCopyBytes), in_bytes(kCopyBytes);
  const auto start = Clock::now();
  int next_minute = 1;
  long round = 0;
  for (;; ++round) {
    // Rank 0 decides for everybody whether another round starts, and drops the keys of round
    // - 2, which every rank has left (it reached the last barrier of round - 1).
    const std::string go = "soak/go/" + std::to_string(round);
    if (rank == 0) {
      client->set(go, Clock::now() - start < std::chrono::minutes(minutes) ? "1" : "0");
      for (const char* step : {"go", "joined", "copied"}) {
        client->remove("soak/" + std::string(step) + "/" + std::to_string(round - 2));
      }
    }
    if (client->get(go, std::chrono::seconds(60)).value_or("0") != "1") break;
    // Between rounds no object is alive: the figures of a leak-free loop stay flat.
    if (round == 0) report(kStart, 0);
    if (round == 1) report(kWarm, 1);
    if (Clock::now() - start >= std::chrono::minutes(next_minute)) report(next_minute++, round);
    if (!run_round(*client, rank, ranks, round, out_bytes, in_bytes)) {
      status = 4;
      break;
    }
  }
  report(kEnd, round);
  // The store lives in rank 0: the others leave first.
  if (rank != 0) {
    smem_bm_uninit(0);
    client->add("soak/left", 1);
    client.reset();
  } else {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (client->add("soak/left", 0) < ranks - 1 && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    client.reset();
    smem_bm_uninit(0);
  }
  return status;
}

// A TCP port that was free a moment ago, for the store rank 0 starts.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    address.sin_port = 0;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

struct Totals {
  long rounds = 0;
  size_t rss = 0;
  int fds = 0;
  int reported = 0;
  std::map<int, size_t> rss_by_rank;
};

std::string label_name(int label) {
  if (label == kStart) return "start";
  if (label == kWarm) return "warm";
  if (label == kEnd) return "end";
  return std::to_string(label) + " min";
}

void print_row(int label, const Totals& totals, int shm_entries, const Totals* warm) {
  std::printf("%-9s %10ld %12.1f %8d %10d", label_name(label).c_str(), totals.rounds,
              static_cast<double>(totals.rss) / (1 << 20), totals.fds, shm_entries);
  if (warm != nullptr && label != kWarm) {
    std::printf("   RSS x%.3f of warm, fds %+d", static_cast<double>(totals.rss) / warm->rss,
                totals.fds - warm->fds);
  }
  std::printf("\n");
  std::fflush(stdout);
}

int run_soak(const std::vector<std::string>& args) {
  int minutes = 10, ranks = 4;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--minutes") {
      minutes = std::atoi(args[i + 1].c_str());
    } else if (args[i] == "--ranks") {
      ranks = std::atoi(args[i + 1].c_str());
    } else {
      std::fprintf(stderr, "usage: memloom-bench soak [--minutes N] [--ranks R]\n");
      return 2;
    }
  }
  if (args.size() % 2 != 0 || minutes < 1 || ranks < 2) {
    std::fprintf(stderr, "usage: memloom-bench soak [--minutes N >= 1] [--ranks R >= 2]\n");
    return 2;
  }
  const std::string job = "soak" + std::to_string(::getpid());
  const std::string url = "tcp://127.0.0.1:" + std::to_string(free_port());
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return 3;
  const int shm_at_start = count_entries("/dev/shm", "memloom");
  std::printf("soak: %d ranks on 2 emulated nodes, BM create/join/copy/leave/destroy for %d min\n",
              ranks, minutes);
  std::printf("%-9s %10s %12s %8s %10s\n", "minute", "rounds", "RSS (MiB)", "fds", "/dev/shm");

  std::vector<pid_t> pids;
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(pipe_fds[0]);
      ::setenv("MEMLOOM_NODE", (job + "-node" + std::to_string(rank * 2 / ranks)).c_str(), 1);
      ::setenv("MEMLOOM_JOB_ID", job.c_str(), 1);
      ::_exit(run_rank(rank, ranks, url, minutes, pipe_fds[1]));
    }
    pids.push_back(pid);
  }
  ::close(pipe_fds[1]);

  // Lines "rank label rounds rss fds"; a row is printed once every rank reported it.
  std::map<int, Totals> rows;
  std::string pending;
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    pending.append(buffer, static_cast<size_t>(got));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      int rank = 0, label = 0, fds = 0;
      long rounds = 0;
      size_t rss = 0;
      std::sscanf(pending.c_str(), "%d %d %ld %zu %d", &rank, &label, &rounds, &rss, &fds);
      pending.erase(0, newline + 1);
      Totals& row = rows[label];
      row.rounds = std::max(row.rounds, rounds);
      row.rss += rss;
      row.fds += fds;
      row.rss_by_rank[rank] = rss;
      if (++row.reported == ranks) {
        const int shm = count_entries("/dev/shm", "memloom") - shm_at_start;
        const auto warm = rows.find(kWarm);
        print_row(label, row, shm,
                  warm != rows.end() && warm->second.reported == ranks ? &warm->second : nullptr);
      }
    }
  }
  ::close(pipe_fds[0]);
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  const int shm_left = count_entries("/dev/shm", "memloom") - shm_at_start;
  const Totals& warm = rows[kWarm];
  const Totals& end = rows[kEnd];
  const bool complete = warm.reported == ranks && end.reported == ranks;
  const bool fds_grew = complete && end.fds > warm.fds;
  // Memory is judged after the first minute (allocator pools and caches fill up in it) and
  // allowed 5% of noise.
  const auto settled = rows.find(1);
  const Totals& base =
      settled != rows.end() && settled->second.reported == ranks ? settled->second : warm;
  const bool rss_grew = complete && end.rss > base.rss + base.rss / 20;
  if (complete) {
    std::printf("RSS by rank (MiB, %s -> end):", &base == &warm ? "warm" : "1 min");
    for (const auto& [rank, rss] : end.rss_by_rank) {
      std::printf("  %d: %.1f -> %.1f", rank,
                  static_cast<double>(base.rss_by_rank.at(rank)) / (1 << 20),
                  static_cast<double>(rss) / (1 << 20));
    }
    std::printf("  (rank 0 hosts the config store)\n");
  }
  const bool pass = failed == 0 && complete && !fds_grew && !rss_grew && shm_left == 0;
  std::printf("soak: %s: %d rank(s) failed; descriptors %s; memory %s; %d /dev/shm entries left\n",
              pass ? "PASS" : "FAIL", failed, fds_grew ? "grew" : "did not grow",
              rss_grew ? "grew" : "did not grow", shm_left);
  return pass ? 0 : 1;
}

}  // namespace

MEMLOOM_REGISTER_BENCH("soak",
                       "BM create/copy/destroy for minutes: RSS, fds, /dev/shm at every minute",
                       run_soak);
