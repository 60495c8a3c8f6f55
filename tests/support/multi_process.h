// Multi-rank tests: ranks are forked children, created before any backend initialises in them.
// A child's gtest failures and exceptions become its exit code, so the parent test sees them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace memloom::testing {

struct RankContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_index = 0;
  std::string node;       // the MEMLOOM_NODE value of this rank
  std::string store_url;  // the job's config store ("" when the run has none)
  std::string job_id;     // unique per run_ranks call; used to namespace keys

  // The device this rank passes to APIs that take one (smem deviceId): its local rank folded onto
  // the devices of the backend, so that a node with more ranks than GPUs (4 ranks on 2 H200s) runs
  // two ranks per GPU. Initialises the backend in the calling rank.
  int device() const;
};

struct MultiProcessOptions {
  int ranks = 2;
  int nodes = 1;  // ranks are dealt to nodes in contiguous blocks
  // Children still alive then are SIGKILLed (times MEMLOOM_TEST_TIMEOUT_SCALE when set).
  std::chrono::milliseconds timeout{60000};
  bool start_store = true;  // a store server in its own child process
  // A store that already runs (an etcd cluster) for the ranks to use; when set, none is started.
  std::string store_url;
  std::map<std::string, std::string> env;  // extra environment for every rank
};

struct RankResult {
  int rank = 0;
  int exit_code = -1;  // 0 = passed
  int signal = 0;      // the signal that killed it, 0 if it exited
  bool timed_out = false;
};

// Forks opts.ranks children that each run body(context) and exit. Returns one result per rank.
std::vector<RankResult> run_ranks(const MultiProcessOptions& opts,
                                  const std::function<void(const RankContext&)>& body);

// Formats the results for a failure message.
std::string describe(const std::vector<RankResult>& results);
bool all_passed(const std::vector<RankResult>& results);

// Entries under /dev/shm whose name starts with "memloom" and names a job that run_ranks started
// in this process (should stay empty).
std::vector<std::string> leftover_shm_entries();

}  // namespace memloom::testing

#define EXPECT_ALL_RANKS_PASS(results) \
  EXPECT_TRUE(::memloom::testing::all_passed(results)) << ::memloom::testing::describe(results)
