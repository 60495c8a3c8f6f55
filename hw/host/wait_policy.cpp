#include "hw/host/wait_policy.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "memloom/error.h"

namespace memloom::host {
namespace {

// A phase length from the environment, in microseconds; `fallback` when unset.
std::chrono::nanoseconds phase_from_environment(const char* name,
                                                std::chrono::nanoseconds fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long us = std::strtoll(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || us < 0 || us > 10'000'000) {
    raise(Status::kInvalidInput,
          std::string(name) + "='" + value + "' is not a number of microseconds in [0, 10000000]");
  }
  return std::chrono::microseconds(us);
}

}  // namespace

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns) {
  timespec timeout{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr,
            0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int available_cores_of(const std::vector<ShmMember>& members) {
  cpu_set_t all;
  CPU_ZERO(&all);
  if (::sched_getaffinity(0, sizeof(all), &all) != 0) return available_cores();
  for (const ShmMember& member : members) {
    cpu_set_t theirs;
    CPU_ZERO(&theirs);
    // A member that cannot be queried (exited, another user) adds nothing: the count only errs
    // towards "oversubscribed", whose waits are correct, only slower.
    if (member.pid > 0 && ::sched_getaffinity(member.pid, sizeof(theirs), &theirs) == 0) {
      CPU_OR(&all, &all, &theirs);
    }
  }
  const int count = CPU_COUNT(&all);
  return count > 0 ? count : available_cores();
}

ShmWaitPolicy ShmWaitPolicy::for_members(int members) {
  return for_members(members, available_cores());
}

ShmWaitPolicy ShmWaitPolicy::for_members(int members, int cores) {
  ShmWaitPolicy policy;
  policy.oversubscribed = members > cores;
  policy.spin = phase_from_environment("MEMLOOM_EMU_BARRIER_SPIN_US", policy.spin);
  policy.yield = phase_from_environment("MEMLOOM_EMU_BARRIER_YIELD_US", policy.yield);
  return policy;
}

}  // namespace memloom::host
