// Multi-rank benchmarks fork their own ranks (and a config store process) before anything
// initialises memloom in them, so `memloom-bench shm` stays one command without memloom-run.
// A rank measures and returns named figures; the parent, which never initialises memloom, prints.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace memloom::bench {

// Named figures of one rank, e.g. {"put 4096", 1.2e-6}: seconds per operation.
using Figures = std::map<std::string, double>;

// figures[name] = the smaller of its current value (if any) and seconds.
inline void keep_min(Figures& figures, const std::string& name, double seconds) {
  auto it = figures.find(name);
  if (it == figures.end() || seconds < it->second) figures[name] = seconds;
}

// A small shared-memory area mapped before the fork, for set-up steps only (never timed): a
// barrier, and mailboxes that pass a value (an address, a port) from one rank to the others.
// Waits sleep on a futex in the area, so a rank waiting while another is timed costs no CPU;
// every wait ends with an exception after 120 s.
class RankRendezvous {
 public:
  static constexpr int kMailboxes = 16;

  void barrier(int world_size);
  void publish(int mailbox, uint64_t value);
  uint64_t wait_for(int mailbox);

 private:
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words are plain uint32_t");
  std::atomic<uint32_t> arrived_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> values_[kMailboxes]{};
  std::atomic<uint32_t> posted_[kMailboxes]{};
};

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int device = 0;  // local_rank modulo the node's devices (MEMLOOM_DEVICE, deviceId)
  int node_index = 0;
  std::string store_url;  // a config store every rank may use (started for the job)
  RankRendezvous* rendezvous = nullptr;

  void barrier() const { rendezvous->barrier(world_size); }
};

struct RankJob {
  int ranks = 2;
  int nodes = 1;  // ranks are dealt to emulated nodes in contiguous blocks
  std::chrono::seconds timeout{300};
};

// Forks job.ranks ranks that each run body; returns the union of the figures they returned.
// Throws std::runtime_error with the failing rank's error when a rank fails, dies or the job
// outlives its timeout (every rank still alive is then killed).
Figures run_ranks(const RankJob& job, const std::function<Figures(const RankInfo&)>& body);

// "127.0.0.1:PORT" with a port that was free a moment ago (for TRANS instance names).
std::string free_loopback_address();

}  // namespace memloom::bench
