// The store-death cases, written once for every config store a test can kill: the TCP store server
// (store_death_test.cpp) and an etcd member (tests/etcd/etcd_fault_test.cpp) run the same bodies.
// The store is SIGKILLed while ranks wait on it, or after they built objects on it. Calls that
// need it must fail (never hang) within the store's bound, with a message; calls that do not need
// it keep working; every rank shuts down cleanly and leaves nothing behind.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "tests/faults/fault_harness.h"

namespace memloom::faults {

// A store the test process started and that a rank can kill. The two stores differ in how soon a
// call notices the death: the TCP store's connection closes at once, an etcd client retries its
// members until the call's deadline. `fail_within` is that bound, checked on every call that needs
// the store after (or while) it dies.
struct KillableStore {
  std::string url;
  int pid = -1;                // the store's process, which the ranks watch in /proc
  std::function<void()> kill;  // SIGKILLs it; called in rank 0, a sibling of the store
  uint32_t wait_seconds = 10;  // the deadline given to calls that block on the store
  Clock::duration fail_within = std::chrono::seconds(5);
  // Whether every call fails at once once the store is dead (the TCP store: its connection
  // closed). An etcd client cannot tell a dead member from one that restarts: each call retries
  // for its whole time (the deadline of the API call that makes it, src/store/call_deadline.h:
  // a create's timeout, a destroy's control timeout; else ClientOptions.connect_timeout, which
  // the APIs set from their init timeout), and calls whose failure is only logged (a shutdown's
  // clean-up of its keys) wait it out too.
  bool dead_store_fails_calls_at_once = true;

  // How long `store_calls` calls of a client whose calls get `call_time` each may take together
  // after the store died: fail_within where they fail at once, else all their time plus slack.
  Clock::duration after_death(int store_calls, std::chrono::seconds call_time) const;
};

// Runs `body` on three ranks that use `store`, then checks each rank's and the job's leftovers.
void run_with_killable_store(const KillableStore& store,
                             const std::function<void(const testing::RankContext&)>& body);

// Every rank makes `call`, which blocks on the store; rank 0 kills the store meanwhile. The call
// must fail within store.fail_within, with a message.
void expect_failure_when_store_dies(const testing::RankContext& rank, const KillableStore& store,
                                    const std::function<CallResult()>& call);

// Returns once the store's process is dead (a zombie or reaped).
void wait_for_store_death(const KillableStore& store);

// Each case runs a whole job (run_with_killable_store) and checks it with gtest assertions.
void group_waiting_for_a_missing_rank(const KillableStore& store);
void shm_init_waiting_for_a_missing_rank(const KillableStore& store);
void bm_init_waiting_for_a_missing_rank(const KillableStore& store);
void wholememory_communicator_waiting_for_a_missing_rank(const KillableStore& store);
void shm_objects_built_before_keep_working(const KillableStore& store);
void trans_known_peers_stay_reachable(const KillableStore& store);

}  // namespace memloom::faults
