#include "tests/faults/fault_harness.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <new>
#include <thread>

#include "memloom/error.h"
#include "src/core/fd_broker.h"
#include "src/core/platform_loader.h"
#include "src/store/client.h"
#include "src/store/server.h"
#include "tests/faults/process_audit.h"

namespace memloom::faults {
namespace {

// How long the victim runs its calls before the timer kills it: long enough for every rank to be
// inside the loop, short enough that the victim dies inside a call, not after the test.
constexpr auto kDuringDelay = std::chrono::milliseconds(60);

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

[[noreturn]] void die_now() {
  ::kill(::getpid(), SIGKILL);
  while (true) ::pause();
}

void run_victim(Scenario& scenario, KillPoint when) {
  if (when == KillPoint::kBeforeCall) die_now();
  std::thread([] {
    std::this_thread::sleep_for(kDuringDelay);
    die_now();
  }).detach();
  while (true) scenario.victim_call();
}

void run_survivor(Scenario& scenario, const FaultContext& context) {
  if (!scenario.involves_victim(context)) {
    scenario.shutdown();
    return;
  }
  const auto timeout = std::chrono::seconds(kCallTimeoutSeconds);
  Clock::duration took{};
  CallResult result =
      call_until_failure([&] { return scenario.call(); }, 3 * timeout + kSlack, &took);
  EXPECT_TRUE(result.failed())
      << "rank " << context.rank.rank << ": every call succeeded for "
      << std::chrono::duration_cast<std::chrono::seconds>(3 * timeout + kSlack).count()
      << " s although rank " << context.victim << " was killed";
  if (result.failed()) {
    EXPECT_TRUE(scenario.is_peer_failure(result.code))
        << "rank " << context.rank.rank << ": code " << result.code << ": " << result.message;
    EXPECT_FALSE(result.message.empty()) << "the failure has no message";
    EXPECT_LT(took, timeout + kSlack)
        << "the failing call took "
        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
        << " ms; its deadline was " << kCallTimeoutSeconds << " s";
  }
  const auto shutdown_start = Clock::now();
  scenario.shutdown();
  EXPECT_LT(Clock::now() - shutdown_start, kSlack) << "shutdown after the failure was slow";
}

}  // namespace

std::map<std::string, std::string> fault_environment() {
  return {{"MEMLOOM_TIMEOUT_S", std::to_string(kCallTimeoutSeconds)},
          {"MEMLOOM_EMU_DEVICE_MEM", "256M"},
          {"MEMLOOM_LOG_LEVEL", "off"}};
}

namespace {

std::string& job_store_url_storage() {
  static std::string url;
  return url;
}

}  // namespace

void set_job_store_url(const std::string& url) {
  job_store_url_storage() = url;
}

const std::string& job_store_url() {
  return job_store_url_storage();
}

CallResult call_until_failure(const std::function<CallResult()>& call, Clock::duration give_up,
                              Clock::duration* failing_call_took) {
  const auto end = Clock::now() + give_up;
  while (Clock::now() < end) {
    const auto start = Clock::now();
    CallResult result = call();
    if (result.failed()) {
      *failing_call_took = Clock::now() - start;
      return result;
    }
  }
  return CallResult{};
}

namespace {

void await_count(store::Client& client, const std::string& key, int size) {
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (std::stoll(client.get(key, std::chrono::milliseconds(0)).value_or("0")) < size) {
    if (Clock::now() > end) raise(Status::kTimeout, "fault harness: '" + key + "' timed out");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

void store_barrier(const std::string& store_url, const std::string& name, int size) {
  auto client = store::Client::connect(store_url);
  const std::string key = "fault-barrier/" + name;
  client->add(key, 1);
  await_count(*client, key, size);
  client->add(key + "/left", 1);
}

void await_all_left_barrier(const std::string& store_url, const std::string& name, int size) {
  auto client = store::Client::connect(store_url);
  await_count(*client, "fault-barrier/" + name + "/left", size);
}

ForkedBarrier::ForkedBarrier() {
  void* memory = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) raise_errno("mmap for a forked barrier", errno);
  arrived_ = new (memory) std::atomic<int>(0);
}

ForkedBarrier::~ForkedBarrier() {
  ::munmap(arrived_, sizeof(std::atomic<int>));
}

void ForkedBarrier::wait(int size) {
  const int target = size * ++round_;
  arrived_->fetch_add(1);
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (arrived_->load() < target && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE(arrived_->load(), target) << "forked barrier timed out";
}

StoreProcess::StoreProcess() {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) raise_errno("pipe", errno);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(pipe_fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try {
      store::ServerOptions options;
      options.listen_url = "tcp://127.0.0.1:0";
      auto server = store::Server::start(options);
      const std::string line = server->url() + "\n";
      if (::write(pipe_fds[1], line.data(), line.size()) < 0) ::_exit(3);
      while (true) ::pause();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "fault harness: the store did not start: %s\n", error.what());
      ::_exit(3);
    }
  }
  ::close(pipe_fds[1]);
  char c;
  while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') url_.push_back(c);
  ::close(pipe_fds[0]);
  if (url_.empty()) raise(Status::kSystem, "fault harness: the store process did not start");
}

StoreProcess::~StoreProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

struct RankAudit::Snapshot {
  FdCensus fds;
};

RankAudit::RankAudit() : before_(std::make_shared<Snapshot>()) {
  // Services that live until the process exits by design; started now so they are in the baseline.
  hal::Platform& platform = core::platform();
  core::FdBroker::instance();
  // A CUDA context, made the first time a device is used, holds descriptors until the process
  // exits (the driver's, not ours): every device is used once here so they are in the baseline.
  for (int device = 0; device < platform.device_count(); ++device) {
    platform.create_stream(device).reset();
  }
  before_->fds = take_fd_census();
}

void RankAudit::expect_nothing_left(const std::string& where) const {
  FdCensus after = take_fd_census();
  EXPECT_EQ(fd_growth(before_->fds, after), "")
      << where << ": descriptors left open (before: " << before_->fds.describe()
      << "; after: " << after.describe() << ")";
  EXPECT_EQ(after.count("tcp"), 0) << where << ": TCP sockets left open";
}

JobAudit::JobAudit()
    : shm_before_(testing::leftover_shm_entries()), children_before_(live_children()) {
  become_subreaper();
  std::sort(shm_before_.begin(), shm_before_.end());
}

void JobAudit::expect_nothing_left() const {
  std::vector<std::string> now = testing::leftover_shm_entries();
  std::sort(now.begin(), now.end());
  std::vector<std::string> added;
  std::set_difference(now.begin(), now.end(), shm_before_.begin(), shm_before_.end(),
                      std::back_inserter(added));
  EXPECT_TRUE(added.empty()) << added.size() << " new /dev/shm entries, e.g. "
                             << (added.empty() ? "" : added.front());
  // Orphans are adopted by this (subreaper) process but may need a moment to finish dying.
  auto new_children = [this] {
    std::vector<int> children = live_children();
    children.erase(std::remove_if(children.begin(), children.end(),
                                  [this](int pid) {
                                    return std::find(children_before_.begin(),
                                                     children_before_.end(),
                                                     pid) != children_before_.end();
                                  }),
                   children.end());
    return children;
  };
  std::vector<int> children = new_children();
  for (int i = 0; i < 200 && !children.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    children = new_children();
  }
  EXPECT_TRUE(children.empty()) << "processes of the job still alive: " << join(children);
}

void run_kill_case(const ScenarioFactory& factory, const Topology& topology, KillPoint when) {
  JobAudit job;
  testing::MultiProcessOptions options;
  options.ranks = topology.ranks;
  options.nodes = topology.nodes;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.store_url = job_store_url();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    FaultContext context{rank, topology.victim, topology.victim * topology.nodes / topology.ranks};
    RankAudit audit;  // brings the backend up
    // Set-up calls run under the faulted call's short deadline: every rank's backend is up
    // before any starts them (on a loaded GPU machine, a rank still creating its CUDA contexts
    // made the others' communicator creation time out).
    store_barrier(rank.store_url, rank.job_id + "/backends-up", rank.world_size);
    {
      std::unique_ptr<Scenario> scenario = factory();
      scenario->setup(context);
      store_barrier(rank.store_url, rank.job_id + "/ready", rank.world_size);
      if (context.is_victim()) run_victim(*scenario, when);
      run_survivor(*scenario, context);
    }
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  for (const auto& result : results) {
    if (result.rank == topology.victim) {
      EXPECT_EQ(result.signal, SIGKILL) << testing::describe(results);
    } else {
      EXPECT_TRUE(result.exit_code == 0 && result.signal == 0 && !result.timed_out)
          << "rank " << result.rank << " failed:\n"
          << testing::describe(results);
    }
  }
  job.expect_nothing_left();
}

}  // namespace memloom::faults
