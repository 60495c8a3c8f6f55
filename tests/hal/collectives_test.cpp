// Conformance tests of the emulated backend's Collectives, built through its factory (not the
// Platform). Ranks are forked processes (tests/support/multi_process.h) meeting through the
// config store; "nodes" are emulated, so 2 nodes exercise the ZeroMQ path between leaders.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/host/collectives_factory.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/store_bootstrap.h"
#include "src/store/client.h"
#include "tests/hal/emulated_group_member.h"
#include "tests/support/multi_process.h"

namespace memloom {
namespace {

using testing::RankContext;
using Clock = std::chrono::steady_clock;

constexpr auto kCallDeadline = std::chrono::seconds(20);

// What one rank needs to take part in a group: the store connection outlives the bootstrap.
using Member = testing::EmulatedGroupMember;

Member join_group(const RankContext& context) {
  return testing::join_emulated_group(context, "coll-test", kCallDeadline);
}

Deadline call_deadline() {
  return Deadline::after(kCallDeadline);
}

// Deterministic "random" bytes and sizes every rank can compute for every other rank.
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

std::byte pattern(uint64_t stream, size_t index) {
  return static_cast<std::byte>(mix(stream * 1000003 + index / 8) >> (8 * (index % 8)));
}

void fill(std::byte* data, size_t bytes, uint64_t stream) {
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(stream, i);
}

// Index of the first byte that differs from the pattern, or -1.
long first_mismatch(const std::byte* data, size_t bytes, uint64_t stream) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != pattern(stream, i)) return static_cast<long>(i);
  }
  return -1;
}

// Sizes around the interesting edges: empty, tiny, and larger than a 4 KiB chunk.
size_t size_for(uint64_t seed, size_t largest) {
  static const size_t kEdges[] = {0, 1, 4095, 4096, 4097};
  uint64_t r = mix(seed);
  if (r % 4 == 0) return kEdges[(r >> 8) % 5];
  return static_cast<size_t>((r >> 16) % (largest + 1));
}

void check_broadcast(hal::Collectives& group, int root, size_t bytes, uint64_t stream) {
  std::vector<std::byte> buffer(bytes);
  if (group.rank() == root) fill(buffer.data(), bytes, stream);
  group.broadcast(buffer.data(), bytes, root, call_deadline());
  EXPECT_EQ(first_mismatch(buffer.data(), bytes, stream), -1)
      << "broadcast of " << bytes << " B from root " << root << " on rank " << group.rank();
}

void check_allgather(hal::Collectives& group, size_t bytes, uint64_t stream) {
  const int n = group.size();
  std::vector<std::byte> send(bytes), recv(bytes * n + 1, std::byte{0x5a});
  fill(send.data(), bytes, stream + group.rank());
  group.allgather(send.data(), recv.data(), bytes, call_deadline());
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(recv.data() + r * bytes, bytes, stream + r), -1)
        << "allgather of " << bytes << " B, piece of rank " << r << " on rank " << group.rank();
  }
  EXPECT_EQ(recv.back(), std::byte{0x5a}) << "allgather wrote past the receive buffer";
}

void check_allgatherv(hal::Collectives& group, size_t largest, uint64_t stream) {
  const int n = group.size();
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (int r = n - 1; r >= 0; --r) {  // pieces in reverse rank order, with gaps
    counts[r] = size_for(stream * 31 + r, largest);
    displs[r] = total + 3;
    total += counts[r] + 3;
  }
  std::vector<std::byte> send(counts[group.rank()]), recv(total, std::byte{0x77});
  fill(send.data(), send.size(), stream + group.rank());
  group.allgatherv(send.data(), recv.data(), counts.data(), displs.data(), call_deadline());
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(recv.data() + displs[r], counts[r], stream + r), -1)
        << "allgatherv piece of rank " << r << " (" << counts[r] << " B) on rank " << group.rank();
    EXPECT_EQ(recv[displs[r] - 1], std::byte{0x77}) << "allgatherv wrote into a gap";
  }
}

void check_alltoallv(hal::Collectives& group, size_t largest, uint64_t stream) {
  const int n = group.size();
  const int me = group.rank();
  auto count = [&](int from, int to) { return size_for(stream + from * 977 + to * 131, largest); };
  auto piece_stream = [&](int from, int to) { return stream * 7919 + from * 1024 + to; };
  std::vector<size_t> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  size_t send_total = 0, recv_total = 0;
  for (int p = 0; p < n; ++p) {
    send_counts[p] = count(me, p);
    send_displs[p] = send_total;
    send_total += send_counts[p];
    recv_counts[p] = count(p, me);
    recv_displs[p] = recv_total;
    recv_total += recv_counts[p];
  }
  std::vector<std::byte> send(send_total), recv(recv_total);
  for (int p = 0; p < n; ++p) {
    fill(send.data() + send_displs[p], send_counts[p], piece_stream(me, p));
  }
  group.alltoallv(send.data(), send_counts.data(), send_displs.data(), recv.data(),
                  recv_counts.data(), recv_displs.data(), call_deadline());
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(first_mismatch(recv.data() + recv_displs[p], recv_counts[p], piece_stream(p, me)), -1)
        << "alltoallv piece from rank " << p << " (" << recv_counts[p] << " B) on rank " << me;
  }
}

struct Layout {
  int ranks;
  int nodes;
  const char* chunk;  // MEMLOOM_EMU_COLL_CHUNK ("" = default)
  size_t largest;     // largest per-rank size in the data collectives
};

std::string layout_name(const ::testing::TestParamInfo<Layout>& info) {
  std::string chunk = *info.param.chunk ? info.param.chunk : "default";
  return std::to_string(info.param.ranks) + "ranks_" + std::to_string(info.param.nodes) +
         "nodes_chunk" + chunk;
}

testing::MultiProcessOptions options_for(int ranks, int nodes, const char* chunk = "") {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.nodes = nodes;
  options.timeout = std::chrono::seconds(50);
  if (*chunk) options.env["MEMLOOM_EMU_COLL_CHUNK"] = chunk;
  return options;
}

class CollectivesData : public ::testing::TestWithParam<Layout> {};

TEST_P(CollectivesData, EveryCollectiveDeliversExactBytes) {
  const Layout layout = GetParam();
  auto results = testing::run_ranks(
      options_for(layout.ranks, layout.nodes, layout.chunk), [&](const RankContext& context) {
        Member member = join_group(context);
        hal::Collectives& group = *member.group;
        ASSERT_EQ(group.rank(), context.rank);
        ASSERT_EQ(group.size(), context.world_size);
        for (int i = 0; i < 5; ++i) group.barrier(call_deadline());
        for (uint64_t round = 0; round < 4; ++round) {
          const uint64_t stream = 1000 * round + 17;
          const int root = static_cast<int>(round % layout.ranks);
          check_broadcast(group, root, size_for(stream, layout.largest * 2), stream);
          check_allgather(group, size_for(stream + 1, layout.largest), stream + 100);
          check_allgatherv(group, layout.largest, stream + 200);
          check_alltoallv(group, layout.largest, stream + 300);
        }
        // The explicit edges: nothing at all, and several chunks' worth.
        check_broadcast(group, layout.ranks - 1, 0, 5);
        check_broadcast(group, layout.ranks - 1, layout.largest * 3 + 1, 6);
        check_allgather(group, 0, 7);
        check_allgather(group, layout.largest + 1, 8);
        group.barrier(call_deadline());
      });
  EXPECT_ALL_RANKS_PASS(results);
  EXPECT_TRUE(testing::leftover_shm_entries().empty());
}

INSTANTIATE_TEST_SUITE_P(Layouts, CollectivesData,
                         ::testing::Values(Layout{1, 1, "4K", 9000}, Layout{2, 1, "4K", 9000},
                                           Layout{4, 1, "4K", 9000}, Layout{8, 1, "4K", 9000},
                                           Layout{8, 2, "4K", 9000}, Layout{6, 3, "4K", 9000},
                                           Layout{4, 1, "", 600000}, Layout{8, 2, "", 600000}),
                         layout_name);

class CollectivesAgreement : public ::testing::TestWithParam<int> {};  // param: nodes

// Every rank must get kInvalidInput from the same call, and the group must stay usable.
void expect_invalid_on_every_rank(const std::function<void()>& call, const char* what) {
  try {
    call();
    ADD_FAILURE() << what << ": disagreeing arguments were accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput) << what << ": " << error.what();
  }
}

TEST_P(CollectivesAgreement, DisagreeingArgumentsFailEveryRankAndKeepTheGroup) {
  const int nodes = GetParam();
  auto results = testing::run_ranks(options_for(4, nodes, "4K"), [&](const RankContext& context) {
    Member member = join_group(context);
    hal::Collectives& group = *member.group;
    const int me = context.rank;
    std::vector<std::byte> buffer(64 * 1024), other(64 * 1024 * 4);

    expect_invalid_on_every_rank(
        [&] { group.broadcast(buffer.data(), me == 2 ? 100 : 64, 0, call_deadline()); },
        "broadcast sizes");
    expect_invalid_on_every_rank(
        [&] { group.broadcast(buffer.data(), 64, me == 3 ? 1 : 0, call_deadline()); },
        "broadcast roots");
    expect_invalid_on_every_rank([&] { group.broadcast(buffer.data(), 64, 7, call_deadline()); },
                                 "broadcast root range");
    expect_invalid_on_every_rank(
        [&] {
          group.allgather(buffer.data(), other.data(), me == 1 ? 10000 : 9999, call_deadline());
        },
        "allgather sizes");
    expect_invalid_on_every_rank(
        [&] {
          if (me == 0)
            group.barrier(call_deadline());
          else
            group.broadcast(buffer.data(), 8, 0, call_deadline());
        },
        "different collectives");
    expect_invalid_on_every_rank(
        [&] {
          std::vector<size_t> counts(4, 16), displs{0, 16, 32, 48};
          if (me == 3) counts[1] = 17;
          group.allgatherv(buffer.data(), other.data(), counts.data(), displs.data(),
                           call_deadline());
        },
        "allgatherv counts");
    expect_invalid_on_every_rank(
        [&] {
          std::vector<size_t> counts(4, 8), displs{0, 8, 16, 24};
          std::vector<size_t> recv_counts = counts;
          if (me == 2) recv_counts[0] = 9;  // rank 0 sends 8 bytes to rank 2
          group.alltoallv(buffer.data(), counts.data(), displs.data(), other.data(),
                          recv_counts.data(), displs.data(), call_deadline());
        },
        "alltoallv pairwise counts");
    expect_invalid_on_every_rank(
        [&] { group.broadcast(me == 1 ? nullptr : buffer.data(), 64, 0, call_deadline()); },
        "null buffer");

    // Still in step: a correct call works after all the refused ones.
    group.barrier(call_deadline());
    check_alltoallv(group, 5000, 99);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(Nodes, CollectivesAgreement, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "nodes"; });

struct Failure {
  int ranks;
  int nodes;
  int victim;
};

class CollectivesFailure : public ::testing::TestWithParam<Failure> {};

// A rank dies without a word; every other rank's barrier must fail with kCommunication well
// before its deadline (same-node peers notice the dead pid and tell the other nodes), and every
// later call must fail at once.
TEST_P(CollectivesFailure, DeadRankFailsEveryBarrierPromptly) {
  const Failure failure = GetParam();
  auto results = testing::run_ranks(
      options_for(failure.ranks, failure.nodes), [&](const RankContext& context) {
        Member member = join_group(context);
        member.group->barrier(call_deadline());
        if (context.rank == failure.victim) {
          // Returning from a collective does not mean the others have: messages this rank
          // queued for other nodes may still be in flight. Let them land, then die.
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          ::raise(SIGKILL);
        }
        auto start = Clock::now();
        try {
          member.group->barrier(call_deadline());
          ADD_FAILURE() << "barrier succeeded without rank " << failure.victim;
        } catch (const Error& error) {
          EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
        }
        EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "deadline was 20 s";
        start = Clock::now();
        try {
          std::byte byte{};
          member.group->broadcast(&byte, 1, 0, call_deadline());
          ADD_FAILURE() << "a poisoned group accepted a broadcast";
        } catch (const Error& error) {
          EXPECT_EQ(error.status(), Status::kCommunication);
          EXPECT_NE(std::string(error.what()).find("aborted"), std::string::npos) << error.what();
        }
        EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
      });
  for (const auto& result : results) {
    if (result.rank == failure.victim) {
      EXPECT_EQ(result.signal, SIGKILL);
    } else {
      EXPECT_TRUE(result.exit_code == 0 && result.signal == 0 && !result.timed_out)
          << testing::describe(results);
    }
  }
  EXPECT_TRUE(testing::leftover_shm_entries().empty());
}

INSTANTIATE_TEST_SUITE_P(Victims, CollectivesFailure,
                         ::testing::Values(Failure{4, 1, 2}, Failure{4, 1, 0}, Failure{8, 2, 5},
                                           Failure{8, 2, 4}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "ranks_" +
                                  std::to_string(info.param.nodes) + "nodes_victim" +
                                  std::to_string(info.param.victim);
                         });

// Nobody shares a node with the victim, so nobody can see its pid die: the others learn it from
// the deadline (kTimeout on the rank that waited for it, the poison on the others).
TEST(Collectives, RankAloneOnItsNodeDiesAndTheOthersFailAtTheirDeadline) {
  auto results = testing::run_ranks(options_for(3, 3), [&](const RankContext& context) {
    Member member = join_group(context);
    member.group->barrier(call_deadline());
    if (context.rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::raise(SIGKILL);
    }
    auto start = Clock::now();
    try {
      member.group->barrier(Deadline::after(std::chrono::milliseconds(500)));
      ADD_FAILURE() << "barrier succeeded without rank 2";
    } catch (const Error& error) {
      EXPECT_TRUE(error.status() == Status::kTimeout || error.status() == Status::kCommunication)
          << error.what();
    }
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
  });
  EXPECT_EQ(results[2].signal, SIGKILL);
  EXPECT_TRUE(results[0].exit_code == 0 && results[1].exit_code == 0) << testing::describe(results);
}

TEST(Collectives, AbortFromAnotherThreadWakesEveryRank) {
  auto results = testing::run_ranks(options_for(4, 2), [&](const RankContext& context) {
    Member member = join_group(context);
    std::thread aborter;
    if (context.rank == 1) {
      aborter = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        member.group->abort("the test gave up");
      });
    }
    auto start = Clock::now();
    // Rank 1 also blocks: rank 3 never arrives, so only the abort can end this barrier early.
    if (context.rank != 3) {
      try {
        member.group->barrier(call_deadline());
        ADD_FAILURE() << "barrier succeeded although rank 3 never came";
      } catch (const Error& error) {
        EXPECT_EQ(error.status(), Status::kCommunication);
        EXPECT_NE(std::string(error.what()).find("the test gave up"), std::string::npos)
            << error.what();
      }
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      EXPECT_THROW(member.group->barrier(call_deadline()), Error);
    }
    if (aborter.joinable()) aborter.join();
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(Collectives, MissingRankTimesOutAtTheDeadlineAndPoisonsTheGroup) {
  auto results = testing::run_ranks(options_for(3, 1), [&](const RankContext& context) {
    Member member = join_group(context);
    if (context.rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      auto start = Clock::now();
      try {
        member.group->barrier(call_deadline());
        ADD_FAILURE() << "barrier of a poisoned group succeeded";
      } catch (const Error& error) {
        EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
      }
      EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
      return;
    }
    auto start = Clock::now();
    try {
      member.group->barrier(Deadline::after(std::chrono::milliseconds(300)));
      ADD_FAILURE() << "barrier succeeded without rank 2";
    } catch (const Error& error) {
      // The first rank to reach its deadline times out; it poisons the group, so the other one
      // may see either the timeout or the poison.
      EXPECT_TRUE(error.status() == Status::kTimeout || error.status() == Status::kCommunication)
          << error.what();
      // A timeout names whom it waited for.
      if (error.status() == Status::kTimeout) {
        EXPECT_NE(std::string(error.what()).find("rank 2 (of 3 on this node)"), std::string::npos)
            << error.what();
      }
    }
    auto elapsed = Clock::now() - start;
    EXPECT_GE(elapsed, std::chrono::milliseconds(250));
    EXPECT_LT(elapsed, std::chrono::milliseconds(1200));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// A barrier that waits past 5 s says, at warn, which rank it waits for (a wait that talks), and
// then completes normally when that rank comes: on one node (the shared-memory barrier) and
// across two (the peer mesh).
void late_rank_is_named(int nodes, const std::string& expected) {
  auto results = testing::run_ranks(options_for(2, nodes), [&](const RankContext& context) {
    Member member = join_group(context);
    if (context.rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(6500));
      member.group->barrier(call_deadline());
      return;
    }
    std::mutex mutex;
    std::vector<std::string> warnings;
    const log::Level old_level = log::level();
    log::set_level(log::Level::kWarn);
    log::set_sink([&](log::Level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      warnings.push_back(message);
    });
    member.group->barrier(Deadline::after(std::chrono::seconds(30)));
    log::set_sink(nullptr);
    log::set_level(old_level);
    bool named = false;
    for (const std::string& line : warnings) {
      named = named || line.find(expected) != std::string::npos;
    }
    EXPECT_TRUE(named) << "warnings seen: " << warnings.size()
                       << (warnings.empty() ? "" : ", first: " + warnings.front());
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(Collectives, ABarrierWaitPastFiveSecondsNamesTheRankItWaitsFor) {
  late_rank_is_named(1, "waiting for rank 1 (of 2 on this node) to arrive at barrier");
}

TEST(Collectives, ACrossNodeWaitPastFiveSecondsNamesTheRankItWaitsFor) {
  late_rank_is_named(2, "waiting for rank 1 on another node");
}

TEST(Collectives, SixteenRanksDoManyBarriersWithoutBurningCpu) {
  rusage before{}, after{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const auto start = Clock::now();
  auto results = testing::run_ranks(options_for(16, 1), [&](const RankContext& context) {
    Member member = join_group(context);
    for (int i = 0; i < 200; ++i) member.group->barrier(call_deadline());
    // A long wait: fifteen ranks wait a second for the last one and must sleep meanwhile.
    if (context.rank == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    member.group->barrier(call_deadline());
  });
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  ::getrusage(RUSAGE_CHILDREN, &after);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  const double cpu = seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) -
                     seconds(before.ru_stime);
  EXPECT_ALL_RANKS_PASS(results);
  std::printf("16 ranks x 200 barriers + a 1 s wait: %.2f s wall, %.2f s CPU in all children\n",
              wall, cpu);
  EXPECT_LT(wall, 20.0);
  // Spinning waiters would keep both cores busy for the whole run (> 2 s of CPU for the wait
  // alone); sleeping ones use a small fraction.
  EXPECT_LT(cpu, 1.5);
}

TEST(Collectives, InvalidGroupSpecIsRejected) {
  struct NoBootstrap : hal::Bootstrap {
    void put(const std::string&, const std::string&) override { FAIL(); }
    std::string wait_get(const std::string&, Deadline) override { return ""; }
    std::string publish_fd(int) override { return ""; }
    void withdraw_fd(const std::string&) override {}
    int fetch_fd(const std::string&, Deadline) override { return -1; }
  } bootstrap;
  auto deadline = Deadline::after(std::chrono::seconds(1));
  hal::GroupSpec spec{2, 2, {"a", "a"}, {1, 2}};
  EXPECT_THROW(host::create_collectives(spec, bootstrap, deadline), Error);
  spec = hal::GroupSpec{0, 2, {"a"}, {1, 2}};
  EXPECT_THROW(host::create_collectives(spec, bootstrap, deadline), Error);
  spec = hal::GroupSpec{0, 0, {}, {}};
  try {
    host::create_collectives(spec, bootstrap, deadline);
    ADD_FAILURE() << "an empty group was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
  }
}

}  // namespace
}  // namespace memloom
