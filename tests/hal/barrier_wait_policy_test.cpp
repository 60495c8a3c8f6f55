// The emulated node barrier's wait policy (hw/host/shm_group.h, ShmWaitPolicy): spinning only
// while the node's members do not outnumber the cores, yielding otherwise, sleeping on the futex
// after that, and the member that completes a barrier waking the sleepers. Ranks are forked
// processes (tests/support/multi_process.h) on one emulated node.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "hw/host/collectives_factory.h"
#include "hw/host/shm_group.h"
#include "memloom/error.h"
#include "src/core/store_bootstrap.h"
#include "src/store/client.h"
#include "tests/hal/emulated_group_member.h"
#include "tests/support/multi_process.h"

namespace memloom {
namespace {

using testing::RankContext;
using Clock = std::chrono::steady_clock;

constexpr auto kCallDeadline = std::chrono::seconds(20);

using Member = testing::EmulatedGroupMember;

Member join_group(const RankContext& context) {
  return testing::join_emulated_group(context, "wait-policy", kCallDeadline);
}

testing::MultiProcessOptions options_for(int ranks) {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.timeout = std::chrono::seconds(50);
  return options;
}

// Restricts the calling process to the first CPU it may run on.
void bind_to_one_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(::sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0);
    return;
  }
  FAIL() << "no CPU in this process's affinity mask";
}

TEST(BarrierWaitPolicy, SpinsOnlyWhileMembersDoNotOutnumberTheCores) {
  const int cores = host::available_cores();
  ASSERT_GE(cores, 1);
  EXPECT_FALSE(host::ShmWaitPolicy::for_members(cores).oversubscribed);
  EXPECT_TRUE(host::ShmWaitPolicy::for_members(cores + 1).oversubscribed);
  // The phase lengths can be set in microseconds; nonsense is refused.
  ::setenv("MEMLOOM_EMU_BARRIER_SPIN_US", "7", 1);
  ::setenv("MEMLOOM_EMU_BARRIER_YIELD_US", "0", 1);
  auto policy = host::ShmWaitPolicy::for_members(1);
  EXPECT_EQ(policy.spin, std::chrono::microseconds(7));
  EXPECT_EQ(policy.yield, std::chrono::microseconds(0));
  ::setenv("MEMLOOM_EMU_BARRIER_SPIN_US", "fast", 1);
  try {
    host::ShmWaitPolicy::for_members(1);
    ADD_FAILURE() << "a spin length of 'fast' was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
  }
  ::unsetenv("MEMLOOM_EMU_BARRIER_SPIN_US");
  ::unsetenv("MEMLOOM_EMU_BARRIER_YIELD_US");
}

// Six ranks bound to one core: the group is oversubscribed, so waiters yield instead of
// spinning, and every barrier and allgather still completes with the right data.
TEST(BarrierWaitPolicy, MoreMembersThanCoresPassBarriersAndAllgathers) {
  const auto start = Clock::now();
  auto results = testing::run_ranks(options_for(6), [&](const RankContext& context) {
    bind_to_one_cpu();
    ASSERT_EQ(host::available_cores(), 1);
    ASSERT_TRUE(host::ShmWaitPolicy::for_members(6).oversubscribed);
    Member member = join_group(context);
    testing::checked_barrier_rounds(*member.group, 300, kCallDeadline);
  });
  EXPECT_ALL_RANKS_PASS(results);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("6 ranks on one core, 300 x (barrier + allgather): %.2f s\n", seconds);
  EXPECT_LT(seconds, 20.0);
}

// No spin and no yield: every waiter goes straight to the futex, so every barrier depends on
// the completer waking the sleepers. A lost wake-up costs a 20 ms sleep slice; 200 of them would
// take 4 s, correct wake-ups a fraction of that even on a loaded machine.
TEST(BarrierWaitPolicy, SleepingWaitersAreWokenByTheMemberThatCompletes) {
  auto options = options_for(4);
  options.env["MEMLOOM_EMU_BARRIER_SPIN_US"] = "0";
  options.env["MEMLOOM_EMU_BARRIER_YIELD_US"] = "0";
  auto results = testing::run_ranks(options, [&](const RankContext& context) {
    Member member = join_group(context);
    member.group->barrier(Deadline::after(kCallDeadline));
    const auto start = Clock::now();
    for (int i = 0; i < 200; ++i) {
      // A different rank comes last each time, after the others are surely asleep.
      if (i % 4 == context.rank) std::this_thread::sleep_for(std::chrono::microseconds(300));
      member.group->barrier(Deadline::after(kCallDeadline));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (context.rank == 0) std::printf("200 barriers, all waiters asleep: %.2f s\n", seconds);
    EXPECT_LT(seconds, 2.0);
    testing::checked_barrier_rounds(*member.group, 50, kCallDeadline);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom
