// The emulated node barrier counts the cores its members may run on together (the union of their
// affinity masks, hw/host/shm_group.h: available_cores_of): ranks bound one per core, as
// mpirun binds them, spin; ranks bound to one core together yield. With more members than cores,
// a waiter whose due peers all run on other cores spins briefly: barriers and allgathers stay
// correct with ranks split over two cores.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
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

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

bool bind_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return ::sched_setaffinity(0, sizeof(one), &one) == 0;
}

// A child bound to `cpu` that stays until the returned pipe end is closed.
struct ParkedChild {
  pid_t pid = -1;
  int release_fd = -1;
};

ParkedChild park_child_on(int cpu) {
  int ready[2], release[2];
  if (::pipe(ready) != 0 || ::pipe(release) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    const char bound = bind_to(cpu) ? 1 : 0;
    if (::write(ready[1], &bound, 1) != 1) ::_exit(2);
    char byte;
    while (::read(release[0], &byte, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char bound = 0;
  const bool told = ::read(ready[0], &bound, 1) == 1;
  ::close(ready[0]);
  if (pid < 0 || !told || bound != 1) {
    ::close(release[1]);
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    return {};
  }
  return {pid, release[1]};
}

void release(const ParkedChild& child) {
  ::close(child.release_fd);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
}

// Runs in a child bound to `my_cpu`: the cores it counts for itself and `peer`, with 2 members.
struct Counted {
  int cores = -1;
  bool oversubscribed = false;
};

Counted count_from(int my_cpu, pid_t peer) {
  int out[2];
  if (::pipe(out) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    Counted counted;
    if (bind_to(my_cpu)) {
      counted.cores = host::available_cores_of({{0, ::getpid()}, {1, peer}});
      counted.oversubscribed = host::ShmWaitPolicy::for_members(2, counted.cores).oversubscribed;
    }
    const bool written = ::write(out[1], &counted, sizeof(counted)) == sizeof(counted);
    ::_exit(written ? 0 : 1);
  }
  ::close(out[1]);
  Counted counted;
  if (pid < 0 || ::read(out[0], &counted, sizeof(counted)) != sizeof(counted)) counted = {};
  ::close(out[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return counted;
}

TEST(BarrierWaitPolicyCores, MembersBoundToDifferentCoresAreNotOversubscribed) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to bind to";
  const ParkedChild peer = park_child_on(cpus[1]);
  ASSERT_GT(peer.pid, 0) << "could not start a child bound to CPU " << cpus[1];
  const Counted counted = count_from(cpus[0], peer.pid);
  release(peer);
  EXPECT_EQ(counted.cores, 2) << "CPU " << cpus[0] << " and CPU " << cpus[1];
  EXPECT_FALSE(counted.oversubscribed);
}

TEST(BarrierWaitPolicyCores, MembersBoundToOneCoreAreOversubscribed) {
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const ParkedChild peer = park_child_on(cpus[0]);
  ASSERT_GT(peer.pid, 0) << "could not start a child bound to CPU " << cpus[0];
  const Counted counted = count_from(cpus[0], peer.pid);
  release(peer);
  EXPECT_EQ(counted.cores, 1);
  EXPECT_TRUE(counted.oversubscribed);
}

TEST(BarrierWaitPolicyCores, MembersWithoutAPidAddNoCores) {
  EXPECT_EQ(host::available_cores_of({{0, 0}, {1, 0}}), host::available_cores());
  EXPECT_EQ(host::available_cores_of({}), host::available_cores());
}

constexpr auto kCallDeadline = std::chrono::seconds(20);

using Member = testing::EmulatedGroupMember;

Member join_group(const testing::RankContext& context) {
  return testing::join_emulated_group(context, "core-union", kCallDeadline);
}

// Four ranks, two bound to each of two cores: oversubscribed, and while a rank waits only for the
// ranks of the other core it spins rather than yields. Every allgather is checked.
TEST(BarrierWaitPolicyCores, FourRanksOnTwoCoresPassBarriersAndAllgathers) {
  const auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to bind to";
  testing::MultiProcessOptions options;
  options.ranks = 4;
  options.timeout = std::chrono::seconds(50);
  auto results = testing::run_ranks(options, [&](const testing::RankContext& context) {
    ASSERT_TRUE(bind_to(cpus[static_cast<size_t>(context.rank % 2)]));
    Member member = join_group(context);
    testing::checked_barrier_rounds(*member.group, 300, kCallDeadline);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom
