// Collectives as the core gets them: from the Platform, inside a core::Group. On the CUDA backend
// these are NCCL communicators (one rank per GPU) or, with several ranks on one GPU, the
// host-memory fallback; both must deliver the same bytes and fail the same way.
#include <signal.h>

#include <thread>
#include <vector>

#include "tests/cuda/backend_test_helpers.h"

namespace memloom::backend_test {
namespace {

using Clock = std::chrono::steady_clock;

struct Layout {
  int ranks;
  int nodes;
};

class PlatformCollectives : public ::testing::TestWithParam<Layout> {};

void exchange_everything(hal::Collectives& group, uint64_t round) {
  const int n = group.size(), me = group.rank();
  const size_t sizes[] = {0, 1, 4097, (1u << 20) + 3};
  for (size_t bytes : sizes) {
    const uint64_t s = round * 100 + bytes % 97;
    std::vector<uint8_t> buffer(bytes);
    const int root = static_cast<int>(round % n);
    if (me == root) {
      for (size_t i = 0; i < bytes; ++i) buffer[i] = pattern(s, i);
    }
    group.broadcast(buffer.data(), bytes, root, soon());
    EXPECT_EQ(first_mismatch(buffer.data(), bytes, s), -1) << "broadcast of " << bytes;

    std::vector<uint8_t> mine(bytes), all(bytes * n + 1, 0xA5);
    for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(s + me, i);
    group.allgather(mine.data(), all.data(), bytes, soon());
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(first_mismatch(all.data() + r * bytes, bytes, s + r), -1) << "allgather " << r;
    }
    EXPECT_EQ(all.back(), 0xA5) << "allgather wrote past its buffer";
  }
  // allgatherv: rank r contributes (r+1)*1000 bytes, pieces in reverse order with 5-byte gaps.
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (int r = n - 1; r >= 0; --r) {
    counts[r] = static_cast<size_t>(r + 1) * 1000 + round;
    displs[r] = total + 5;
    total += counts[r] + 5;
  }
  std::vector<uint8_t> piece(counts[me]), gathered(total, 0x33);
  for (size_t i = 0; i < piece.size(); ++i) piece[i] = pattern(round + 50 + me, i);
  group.allgatherv(piece.data(), gathered.data(), counts.data(), displs.data(), soon());
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(gathered.data() + displs[r], counts[r], round + 50 + r), -1);
    EXPECT_EQ(gathered[displs[r] - 1], 0x33) << "allgatherv wrote into a gap";
  }
  // alltoallv: rank f sends (f+2*t+1)*300 bytes to rank t.
  auto count = [&](int from, int to) { return static_cast<size_t>(from + 2 * to + 1) * 300; };
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  size_t st = 0, rt = 0;
  for (int p = 0; p < n; ++p) {
    sc[p] = count(me, p), sd[p] = st, st += sc[p];
    rc[p] = count(p, me), rd[p] = rt, rt += rc[p];
  }
  std::vector<uint8_t> out(st), in(rt);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < sc[p]; ++i) out[sd[p] + i] = pattern(1000 * me + p + round, i);
  }
  group.alltoallv(out.data(), sc.data(), sd.data(), in.data(), rc.data(), rd.data(), soon());
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(first_mismatch(in.data() + rd[p], rc[p], 1000 * p + me + round), -1)
        << "alltoallv piece from rank " << p;
  }
  group.barrier(soon());
}

TEST_P(PlatformCollectives, DeliverExactBytes) {
  const Layout layout = GetParam();
  auto results = testing::run_ranks(ranks_on_nodes(layout.ranks, layout.nodes),
                                    [&](const testing::RankContext& context) {
                                      auto group = join(context, "data");
                                      for (uint64_t round = 0; round < 3; ++round) {
                                        exchange_everything(group->collectives(), round);
                                      }
                                    });
  EXPECT_ALL_RANKS_PASS(results);
  EXPECT_TRUE(testing::leftover_shm_entries().empty());
}

// 2 ranks: one per GPU (NCCL); 4 ranks on one node: two per GPU on a 2-GPU machine (fallback);
// 2 nodes: the node-spanning paths.
INSTANTIATE_TEST_SUITE_P(Layouts, PlatformCollectives,
                         ::testing::Values(Layout{1, 1}, Layout{2, 1}, Layout{4, 1}, Layout{4, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "ranks_" +
                                  std::to_string(info.param.nodes) + "nodes";
                         });

// Device memory as send and receive buffers of a collective (the CUDA backend stages it).
TEST(PlatformCollectivesOnDeviceMemory, AllgatherBetweenDeviceBuffers) {
  auto results = testing::run_ranks(ranks_on_nodes(2, 1), [](const testing::RankContext& context) {
    auto group = join(context, "device");
    auto& platform = core::platform();
    auto& domain = platform.memory_domain();
    const size_t g = domain.granularity(hal::MemoryKind::kDevice);
    const int device = platform.current_device();
    auto send_segment = domain.allocate(hal::MemoryKind::kDevice, device, g);
    auto recv_segment = domain.allocate(hal::MemoryKind::kDevice, device, 2 * g);
    auto* send = static_cast<uint8_t*>(domain.map_anywhere(*send_segment));
    auto* recv = static_cast<uint8_t*>(domain.map_anywhere(*recv_segment));
    auto stream = platform.create_stream(device);
    std::vector<uint8_t> host(2 * g);
    domain.register_user_memory(host.data(), host.size());
    for (size_t i = 0; i < g; ++i) host[i] = pattern(7 + context.rank, i);
    stream->copy(send, host.data(), g);
    stream->synchronize(soon());
    group->collectives().allgather(send, recv, g, soon());
    stream->copy(host.data(), recv, 2 * g);
    stream->synchronize(soon());
    EXPECT_EQ(first_mismatch(host.data(), g, 7), -1);
    EXPECT_EQ(first_mismatch(host.data() + g, g, 8), -1);
    domain.unregister_user_memory(host.data());
    domain.unmap_anywhere(send, g);
    domain.unmap_anywhere(recv, 2 * g);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST_P(PlatformCollectives, DisagreementFailsEveryRankAndKeepsTheGroup) {
  const Layout layout = GetParam();
  if (layout.ranks < 2) GTEST_SKIP() << "needs two ranks to disagree";
  auto results = testing::run_ranks(
      ranks_on_nodes(layout.ranks, layout.nodes), [](const testing::RankContext& context) {
        auto group = join(context, "agree");
        auto& c = group->collectives();
        const int me = context.rank;
        std::vector<uint8_t> buffer(4096), all(4096 * context.world_size);
        EXPECT_EQ(status_of([&] { c.broadcast(buffer.data(), me == 1 ? 100 : 64, 0, soon()); }),
                  Status::kInvalidInput);
        EXPECT_EQ(status_of([&] {
                    if (me == 0) {
                      c.barrier(soon());
                    } else {
                      c.allgather(buffer.data(), all.data(), 8, soon());
                    }
                  }),
                  Status::kInvalidInput);
        EXPECT_EQ(status_of([&] { c.broadcast(me == 1 ? nullptr : buffer.data(), 64, 0, soon()); }),
                  Status::kInvalidInput);
        std::vector<size_t> counts(context.world_size, 8), displs(context.world_size);
        for (int p = 0; p < context.world_size; ++p) displs[p] = 8 * p;
        std::vector<size_t> recv_counts = counts;
        if (me == 1) recv_counts[0] = 9;
        EXPECT_EQ(status_of([&] {
                    c.alltoallv(buffer.data(), counts.data(), displs.data(), all.data(),
                                recv_counts.data(), displs.data(), soon());
                  }),
                  Status::kInvalidInput);
        // Still in step.
        for (size_t i = 0; i < 8; ++i) buffer[i] = pattern(me, i);
        c.allgather(buffer.data(), all.data(), 8, soon());
        for (int r = 0; r < context.world_size; ++r) {
          EXPECT_EQ(first_mismatch(all.data() + 8 * r, 8, r), -1);
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST_P(PlatformCollectives, DeadRankFailsTheOthersPromptly) {
  const Layout layout = GetParam();
  if (layout.ranks < 2) GTEST_SKIP() << "needs a survivor";
  const int victim = layout.ranks - 1;
  auto results = testing::run_ranks(
      ranks_on_nodes(layout.ranks, layout.nodes), [&](const testing::RankContext& context) {
        auto group = join(context, "dead");
        group->collectives().barrier(soon());
        if (context.rank == victim) ::raise(SIGKILL);
        auto start = Clock::now();
        EXPECT_EQ(status_of([&] { group->collectives().barrier(soon()); }), Status::kCommunication);
        EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "the deadline was 30 s";
        start = Clock::now();
        try {
          uint8_t byte = 0;
          group->collectives().broadcast(&byte, 1, 0, soon());
          ADD_FAILURE() << "a failed group accepted a broadcast";
        } catch (const Error& error) {
          EXPECT_EQ(error.status(), Status::kCommunication);
          EXPECT_NE(std::string(error.what()).find("aborted"), std::string::npos) << error.what();
        }
        EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
      });
  for (const auto& result : results) {
    if (result.rank == victim) continue;
    EXPECT_TRUE(result.exit_code == 0 && result.signal == 0) << testing::describe(results);
  }
}

TEST_P(PlatformCollectives, AbortFromAnotherThreadWakesTheGroup) {
  const Layout layout = GetParam();
  if (layout.ranks < 2) GTEST_SKIP() << "needs a second rank";
  const int absent = layout.ranks - 1;
  auto results = testing::run_ranks(
      ranks_on_nodes(layout.ranks, layout.nodes), [&](const testing::RankContext& context) {
        auto group = join(context, "abort");
        auto& c = group->collectives();
        if (context.rank == absent) {
          std::this_thread::sleep_for(std::chrono::seconds(2));
          EXPECT_EQ(status_of([&] { c.barrier(soon()); }), Status::kCommunication);
          return;
        }
        std::thread aborter;
        if (context.rank == 0) {
          aborter = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            c.abort("the test gave up");
          });
        }
        const auto start = Clock::now();
        try {
          c.barrier(soon());
          ADD_FAILURE() << "barrier succeeded without rank " << absent;
        } catch (const Error& error) {
          EXPECT_EQ(error.status(), Status::kCommunication);
          EXPECT_NE(std::string(error.what()).find("the test gave up"), std::string::npos)
              << error.what();
        }
        EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
        if (aborter.joinable()) aborter.join();
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(PlatformCollectivesDeadline, MissingRankTimesOutAndPoisons) {
  auto results = testing::run_ranks(ranks_on_nodes(2, 1), [](const testing::RankContext& context) {
    auto group = join(context, "late");
    auto& c = group->collectives();
    if (context.rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2000));
      const auto start = Clock::now();
      EXPECT_EQ(status_of([&] { c.barrier(soon()); }), Status::kCommunication);
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
      return;
    }
    const auto start = Clock::now();
    const Status status =
        status_of([&] { c.barrier(Deadline::after(std::chrono::milliseconds(300))); });
    EXPECT_EQ(status, Status::kTimeout);
    const auto elapsed = Clock::now() - start;
    EXPECT_GE(elapsed, std::chrono::milliseconds(250));
    EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::backend_test
