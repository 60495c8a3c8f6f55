// How a member of a shared-memory group waits for the others: the spin / yield / sleep policy
// (after MPI's and OpenSHMEM's shared-memory transports), the cores it may count on, and the
// waiting primitives (pause, futex) the barrier is built from.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace memloom::host {

struct ShmMember {
  int rank = 0;   // group rank
  pid_t pid = 0;  // for liveness checks (0: unknown)
};

// How a member waits in a barrier. Spinning only pays while every member can hold a core: when
// members outnumber the cores, a spinning waiter takes the core from the member it waits for, so
// waiters yield at once (and a waiter also skips the spin when the member it waits for last ran
// on its own core: ranks need not be pinned). Yielding hands the core over in a few microseconds; a
// futex sleep costs a wake-up (10-20 us on a loaded VM; measured: 4-rank barriers 4-17 us
// yielding vs 12-74 us sleeping at once) but frees the core for good, which long waits need.
struct ShmWaitPolicy {
  // Poll with `pause` (only when not oversubscribed). MPI and OpenSHMEM poll without limit then;
  // 1 ms rides out most preemptions of a peer by other processes (2-rank barrier, 5 runs each at
  // load 5.5-6: 0.17-0.20 us every time with 1 ms, 0.18-0.66 us with 50 us).
  std::chrono::nanoseconds spin{1'000'000};
  std::chrono::nanoseconds yield{1'000'000};  // then poll with sched_yield, then sleep
  bool oversubscribed = false;                // members on the node > cores available

  // The default policy for `members` on this node sharing `cores`. MEMLOOM_EMU_BARRIER_SPIN_US
  // and MEMLOOM_EMU_BARRIER_YIELD_US override the phase lengths in microseconds (0 skips a phase).
  static ShmWaitPolicy for_members(int members, int cores);
  // The same with the cores this process may run on (available_cores()).
  static ShmWaitPolicy for_members(int members);
};

// The cores this process may run on (sched_getaffinity; hardware_concurrency as a fallback).
int available_cores();

// The cores the members may run on together: the union of their affinity masks (this process's
// and those of the members with a known pid that it may query). A group's own mask undercounts:
// two ranks bound to one core each (as mpirun binds them) are not two members on one core.
int available_cores_of(const std::vector<ShmMember>& members);

// Waits while *word == expected, at most timeout_ns. FUTEX_WAIT on a MAP_SHARED mapping (not
// FUTEX_PRIVATE_FLAG): the waiters are other processes.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns);
// Wakes every waiter on `word`, in any process.
void futex_wake_all(std::atomic<uint32_t>* word);

// One pause of a spin loop: tells the core a waiter spins, which frees resources for a sibling
// hyper-thread. Inline: it sits in the barrier's hottest loop.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace memloom::host
