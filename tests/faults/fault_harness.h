// The kill-at-a-blocking-call harness. A Scenario brings every rank to the point where it makes
// one blocking call (a barrier, a create, a copy aimed at the victim...). Then the victim SIGKILLs
// itself, either right before the call or from a timer while it is making such calls in a loop,
// and every survivor must get an error from its call within the call's deadline, shut down
// cleanly, and leave no descriptor behind; the job must leave no process and no /dev/shm entry.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/multi_process.h"

namespace memloom::faults {

using Clock = std::chrono::steady_clock;

// Timeouts every scenario configures (seconds where the API counts seconds).
inline constexpr int kCallTimeoutSeconds = 2;
// Extra time a failing call or a shutdown may take on a loaded 2-core machine.
inline constexpr auto kSlack = std::chrono::seconds(4);

enum class KillPoint { kBeforeCall, kDuringCalls };

struct Topology {
  int ranks = 3;
  int nodes = 1;
  int victim = 1;
};

// What a rank's scenario knows: its own context and who dies.
struct FaultContext {
  testing::RankContext rank;
  int victim = 1;
  int victim_node = 0;  // node index of the victim (run_ranks deals ranks in contiguous blocks)
  bool is_victim() const { return rank.rank == victim; }
  bool shares_victims_node() const { return rank.node_index == victim_node; }
};

// The outcome of one call in the API's own terms: code 0 is success.
struct CallResult {
  int code = 0;
  std::string message;
  bool failed() const { return code != 0; }
};

class Scenario {
 public:
  virtual ~Scenario() = default;
  // Every rank: init, create the objects the call needs.
  virtual void setup(const FaultContext& context) = 0;
  // One blocking call, aimed at the victim where the call has a target.
  virtual CallResult call() = 0;
  // What the victim does until it dies (default: the same call, for collectives).
  virtual void victim_call() { call(); }
  // After the failure: destroy the objects and leave the world. Must not hang.
  virtual void shutdown() = 0;
  // Whether this rank's call involves the victim at all (a copy into memory mapped on the
  // victim's node does not); ranks that are not involved only shut down.
  virtual bool involves_victim(const FaultContext&) const { return true; }
  // Codes that mean "a peer is gone or did not answer in time".
  virtual bool is_peer_failure(int code) const = 0;
};

using ScenarioFactory = std::function<std::unique_ptr<Scenario>()>;

// Timeouts for every API, through the environment (MEMLOOM_TIMEOUT_S) and the configs.
std::map<std::string, std::string> fault_environment();

// The config store of the jobs the harness starts (run_kill_case, the missing-rank cases): "" (the
// default) starts a TCP store server per job; a test binary that runs the same cases on etcd names
// its cluster here once, before the first job.
void set_job_store_url(const std::string& url);
const std::string& job_store_url();

// Runs the scenario on topology.ranks processes, kills the victim at `when`, and checks the
// survivors and the leftovers with gtest assertions.
void run_kill_case(const ScenarioFactory& factory, const Topology& topology, KillPoint when);

// Checks of one rank around its work: takes a descriptor census first (after starting the
// process-wide services that live until exit: the platform and the fd broker) and expects no
// growth at the end.
class RankAudit {
 public:
  RankAudit();
  void expect_nothing_left(const std::string& where) const;

 private:
  struct Snapshot;
  std::shared_ptr<Snapshot> before_;
};

// Checks of the test process around a job: no new /dev/shm entry, no live child that was not
// there before (a store the test runs for several jobs, such as an etcd member, is).
class JobAudit {
 public:
  JobAudit();
  void expect_nothing_left() const;

 private:
  std::vector<std::string> shm_before_;
  std::vector<int> children_before_;
};

// A config store server in a child of the test process, which a test may kill. Forked before the
// ranks (the test process stays single-threaded); killed and reaped on destruction.
class StoreProcess {
 public:
  StoreProcess();
  ~StoreProcess();
  StoreProcess(const StoreProcess&) = delete;
  StoreProcess& operator=(const StoreProcess&) = delete;
  int pid() const { return pid_; }
  const std::string& url() const { return url_; }

 private:
  int pid_ = -1;
  std::string url_;
};

// A barrier among forked ranks that needs no store (for tests that kill it): a counter in shared
// anonymous memory, created by the test process before it forks the ranks.
class ForkedBarrier {
 public:
  ForkedBarrier();
  ~ForkedBarrier();
  ForkedBarrier(const ForkedBarrier&) = delete;
  ForkedBarrier& operator=(const ForkedBarrier&) = delete;
  // The n-th wait of every rank returns once `size` ranks made their n-th wait (or after 30 s).
  void wait(int size);

 private:
  std::atomic<int>* arrived_ = nullptr;
  int round_ = 0;
};

// A store barrier among `size` ranks (the ranks' own rendezvous outside the API under test).
void store_barrier(const std::string& store_url, const std::string& name, int size);
// Returns once every rank has left store_barrier(name): then the store may be broken without
// catching a rank still polling the barrier.
void await_all_left_barrier(const std::string& store_url, const std::string& name, int size);

// Loops `call` until it fails or `give_up` passes; returns the failing result (code 0 if none)
// and how long the failing call took.
CallResult call_until_failure(const std::function<CallResult()>& call, Clock::duration give_up,
                              Clock::duration* failing_call_took);

}  // namespace memloom::faults
