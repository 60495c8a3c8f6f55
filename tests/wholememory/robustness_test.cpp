// Nothing waits forever: a collective call fails with an error when a peer is gone or never joins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

TEST(WholeMemoryRobustness, APeerThatDiedFailsTheCollective) {
  auto options = ranks_on_nodes(2, 1);
  auto results =
      run_with_comm(options, [](const testing::RankContext& me, wholememory_comm_t comm) {
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        // A short deadline from here on only: creating an NCCL communicator on a loaded machine
        // has taken more than 10 s.
        ASSERT_EQ(::setenv("MEMLOOM_TIMEOUT_S", "10", 1), 0);
        if (me.rank == 1) ::_exit(0);  // gone without a word
        const auto start = std::chrono::steady_clock::now();
        wholememory_handle_t handle = nullptr;
        EXPECT_EQ(WHOLEMEMORY_COMMUNICATION_ERROR,
                  wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_CHUNKED,
                                     WHOLEMEMORY_ML_HOST, 8));
        EXPECT_EQ(nullptr, handle);
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(11));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryRobustness, ARankThatPassesABadHandleLeavesTheOthersWithATimeout) {
  auto options = ranks_on_nodes(2, 1);
  auto results =
      run_with_comm(options, [](const testing::RankContext& me, wholememory_comm_t comm) {
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                        WHOLEMEMORY_ML_HOST, 8));
        // A short deadline from here on only: creating an NCCL communicator may take longer.
        ASSERT_EQ(::setenv("MEMLOOM_TIMEOUT_S", "1", 1), 0);
        if (me.rank == 1) {
          // A bad handle is refused at once, without taking part in the collective...
          EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                    wholememory_free(reinterpret_cast<wholememory_handle_t>(0x40)));
          ::usleep(1500 * 1000);  // alive but never joining: the peer must give up by its deadline
        } else {
          // ...so the rank that passed a good one gives up at the deadline.
          const auto start = std::chrono::steady_clock::now();
          EXPECT_EQ(WHOLEMEMORY_COMMUNICATION_ERROR, wholememory_free(handle));
          EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1400));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::wmtest
