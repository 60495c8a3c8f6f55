// What WholeMemory leaves in the config store: allocations made and freed for days must not grow
// it. A HIERARCHY allocation splits its communicator twice (a local and a cross communicator);
// their keys go when every rank has freed the allocation.
#include <gtest/gtest.h>

#include "src/store/client.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/runtime.h"
#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

TEST(WholeMemoryStoreKeys, FreedHierarchyAllocationsLeaveNoKeysOfTheirCommunicators) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [](const testing::RankContext& me, wholememory_comm_t comm) {
        auto communicator = wholememory::Runtime::instance().comm(comm);
        const std::string splits = communicator->group().prefix().prefix() + "split";
        for (int round = 0; round < 3; ++round) {
          wholememory_handle_t handle = nullptr;
          WM_ASSERT_OK(wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_HIERARCHY,
                                          WHOLEMEMORY_ML_HOST, 8));
          WM_ASSERT_OK(wholememory_free(handle));
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        // Removing what is left under the split prefixes counts it.
        if (me.rank == 0) {
          EXPECT_EQ(0u, communicator->group().store().remove_prefix(splits));
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// A communicator split by the user from an allocation's local communicator keeps working after
// the allocation is freed: the allocation's groups keep their keys while they have children.
TEST(WholeMemoryStoreKeys, ASplitOfAnAllocationsCommunicatorOutlivesTheAllocation) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [](const testing::RankContext& me, wholememory_comm_t comm) {
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_HIERARCHY,
                                        WHOLEMEMORY_ML_HOST, 8));
        wholememory_comm_t local = nullptr;
        WM_ASSERT_OK(wholememory_get_local_communicator(&local, handle));
        wholememory_comm_t child = nullptr;
        WM_ASSERT_OK(wholememory_split_communicator(&child, local, 0, me.rank));
        WM_ASSERT_OK(wholememory_free(handle));
        WM_ASSERT_OK(wholememory_communicator_barrier(child));
        wholememory_handle_t on_child = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&on_child, 1 << 20, child, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST, 8));
        WM_ASSERT_OK(wholememory_free(on_child));
        WM_ASSERT_OK(wholememory_destroy_communicator(child));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::wmtest
