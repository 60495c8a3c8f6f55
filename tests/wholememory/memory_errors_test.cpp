// Allocations with a caller's partition plan, and everything that must fail: arguments that
// differ between ranks, values that cannot be allocated, types a multi-node communicator cannot
// map, exhausted memory, and invalid, freed or null handles.
#include <gtest/gtest.h>

#include <vector>

#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

TEST(WholeMemoryMalloc, CallerPartitionPlanOverridesTheEqualPlan) {
  auto results = run_with_comm(ranks_on_nodes(4, 1), [](const testing::RankContext& me,
                                                        wholememory_comm_t comm) {
    const size_t granularity = 40;
    size_t entries[4] = {3, 0, 5, 1};
    const std::vector<size_t> sizes = {120, 0, 200, 40}, offsets = {0, 120, 120, 320, 360};
    for (auto type :
         {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_MT_HIERARCHY}) {
      for (auto location : {WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST}) {
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 360, comm, type, location, granularity, entries));
        std::vector<size_t> got_sizes(4), got_offsets(5);
        WM_ASSERT_OK(wholememory_get_rank_partition_sizes(got_sizes.data(), handle));
        WM_ASSERT_OK(wholememory_get_rank_partition_offsets(got_offsets.data(), handle));
        EXPECT_EQ(sizes, got_sizes);
        EXPECT_EQ(offsets, got_offsets);
        fill_local_partition(handle, 3);
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        for (int r = 0; r < 4; ++r) {
          void* pointer = nullptr;
          size_t size = 0, offset = 0;
          WM_ASSERT_OK(wholememory_get_rank_memory(&pointer, &size, &offset, r, handle));
          EXPECT_EQ(sizes[r], size);
          EXPECT_EQ(-1, first_mismatch(pointer, offset, size, 3)) << "rank " << r;
        }
        wholememory_gref_t gref{};
        WM_ASSERT_OK(wholememory_get_global_reference(&gref, handle));
        EXPECT_FALSE(gref.same_chunk);  // rank 1 is empty: owners cannot be found by division
        if (type == WHOLEMEMORY_MT_CHUNKED && location == WHOLEMEMORY_ML_DEVICE) {
          EXPECT_EQ(120u, gref.stride);
          std::vector<void*> table(4);
          read_memory(table.data(), gref.pointer, sizeof(void*) * 4);
          EXPECT_EQ(nullptr, table[1]);
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        WM_ASSERT_OK(wholememory_free(handle));
      }
    }
    (void)me;
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, MismatchedArgumentsFailOnEveryRank) {
  auto results = run_with_comm(ranks_on_nodes(4, 1), [](const testing::RankContext& me,
                                                        wholememory_comm_t comm) {
    wholememory_handle_t handle = nullptr;
    // One rank asks for a different size.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_malloc(&handle, me.rank == 2 ? 8192 : 4096, comm, WHOLEMEMORY_MT_CHUNKED,
                                 WHOLEMEMORY_ML_HOST, 8));
    EXPECT_EQ(nullptr, handle);
    // One rank asks for a different type.
    EXPECT_EQ(
        WHOLEMEMORY_INVALID_INPUT,
        wholememory_malloc(&handle, 4096, comm,
                           me.rank == 1 ? WHOLEMEMORY_MT_DISTRIBUTED : WHOLEMEMORY_MT_CONTINUOUS,
                           WHOLEMEMORY_ML_DEVICE, 8));
    // One rank passes a partition plan, the others take the equal plan.
    size_t plan[4] = {128, 128, 128, 128};
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                 WHOLEMEMORY_ML_HOST, 8, me.rank == 0 ? plan : nullptr));
    // Plans that differ between ranks.
    size_t skewed[4] = {me.rank == 3 ? 0u : 128u, 128, 128, me.rank == 3 ? 256u : 128u};
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_HOST,
                                 8, skewed));
    // One rank passes a null output: it fails with its own error, the others with the same code.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_malloc(me.rank == 3 ? nullptr : &handle, 4096, comm,
                                 WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_HOST, 8));
    // The communicator still works afterwards.
    WM_ASSERT_OK(
        wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST, 8));
    WM_ASSERT_OK(wholememory_free(handle));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, ValuesThatCannotBeAllocatedFailOnEveryRank) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [](const testing::RankContext&,
                                                        wholememory_comm_t comm) {
    wholememory_handle_t handle = nullptr;
    const auto type = WHOLEMEMORY_MT_CHUNKED;
    const auto host = WHOLEMEMORY_ML_HOST;
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_malloc(&handle, 1000, comm, type, host, 24));
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_malloc(&handle, 0, comm, type, host, 8));
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_malloc(&handle, 64, comm, type, host, 0));
    size_t short_plan[2] = {3, 4};
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE,
              wholememory_malloc(&handle, 64, comm, type, host, 8, short_plan));
    size_t huge_plan[2] = {~size_t{0}, 9};
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE,
              wholememory_malloc(&handle, 64, comm, type, host, 8, huge_plan));
    EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED,
              wholememory_malloc(&handle, 64, comm, WHOLEMEMORY_MT_NONE, host, 8));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wm_c_malloc(&handle, 64, comm, 42, host, 8));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wm_c_malloc(&handle, 64, comm, type, 7, 8));
    // 64 TiB per rank exhausts any device.
    EXPECT_EQ(WHOLEMEMORY_OUT_OF_MEMORY,
              wholememory_malloc(&handle, size_t{1} << 47, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                 WHOLEMEMORY_ML_DEVICE, 4096));
    EXPECT_EQ(nullptr, handle);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, MappedTypesAreRefusedOnEveryRankOfAMultiNodeCommunicator) {
  auto results =
      run_with_comm(ranks_on_nodes(4, 2), [](const testing::RankContext&, wholememory_comm_t comm) {
        wholememory_handle_t handle = nullptr;
        for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
          for (auto location : {WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST}) {
            EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED,
                      wholememory_malloc(&handle, 4096, comm, type, location, 8));
          }
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, InvalidFreedAndNullHandlesAreRefused) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const testing::RankContext&,
                                                        wholememory_comm_t comm) {
    wholememory_handle_t handle = nullptr;
    WM_ASSERT_OK(
        wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_HOST, 8));
    const auto garbage = reinterpret_cast<wholememory_handle_t>(0xbad0);
    for (auto bad : {garbage, static_cast<wholememory_handle_t>(nullptr)}) {
      void* pointer = nullptr;
      size_t value = 0;
      wholememory_comm_t owner = nullptr;
      wholememory_gref_t gref{};
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_communicator(&owner, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_local_communicator(&owner, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_cross_communicator(&owner, bad));
      EXPECT_EQ(WHOLEMEMORY_MT_NONE, wholememory_get_memory_type(bad));
      EXPECT_EQ(WHOLEMEMORY_ML_NONE, wholememory_get_memory_location(bad));
      EXPECT_EQ(WHOLEMEMORY_DB_NONE, wholememory_get_distributed_backend(bad));
      EXPECT_EQ(0u, wholememory_get_total_size(bad));
      EXPECT_EQ(0u, wholememory_get_data_granularity(bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_get_local_memory(&pointer, &value, &value, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_local_size(&value, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_local_offset(&value, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_get_rank_memory(&pointer, &value, &value, 0, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_pointer(&pointer, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_reference(&gref, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_rank_partition_sizes(&value, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_rank_partition_offsets(&value, bad));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_store_to_file(bad, 0, 8, 8, "/nonexistent"));
    }
    // Null outputs on a valid handle.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_communicator(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_local_size(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_local_offset(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_pointer(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_reference(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_rank_partition_sizes(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_rank_partition_offsets(nullptr, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_equal_entry_partition_plan(nullptr, 10, 2));
    size_t per_rank = 0;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_equal_entry_partition_plan(&per_rank, 10, 0));
    WM_EXPECT_OK(wholememory_get_local_memory(nullptr, nullptr, nullptr, handle));

    WM_ASSERT_OK(wholememory_free(handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(handle));  // double free
    // Finalize drops what is still alive; the handles die with it.
    WM_ASSERT_OK(wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                    WHOLEMEMORY_ML_DEVICE, 8));
    WM_ASSERT_OK(wholememory_finalize());
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_barrier(comm));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, HierarchyCommunicatorsServeAllocationsThatMustGoFirst) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [](const testing::RankContext& me, wholememory_comm_t comm) {
        wholememory_handle_t hierarchy = nullptr, node_table = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&hierarchy, 4096, comm, WHOLEMEMORY_MT_HIERARCHY,
                                        WHOLEMEMORY_ML_HOST, 8));
        wholememory_comm_t local = nullptr;
        WM_ASSERT_OK(wholememory_get_local_communicator(&local, hierarchy));
        // The local communicator spans one node, so it can map CONTINUOUS memory.
        WM_ASSERT_OK(wholememory_malloc(&node_table, 1000, local, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_DEVICE, 10));
        fill_local_partition(node_table, 4);
        WM_ASSERT_OK(wholememory_communicator_barrier(local));
        void* global = nullptr;
        WM_ASSERT_OK(wholememory_get_global_pointer(&global, node_table));
        EXPECT_EQ(-1, first_mismatch(global, 0, 1000, 4)) << "node " << me.node_index;
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(hierarchy));
        WM_ASSERT_OK(wholememory_free(node_table));
        WM_ASSERT_OK(wholememory_free(hierarchy));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryMalloc, EqualPartitionPlanRoundsUp) {
  size_t per_rank = 0;
  WM_ASSERT_OK(wholememory_equal_entry_partition_plan(&per_rank, 10, 4));
  EXPECT_EQ(3u, per_rank);
  WM_ASSERT_OK(wholememory_equal_entry_partition_plan(&per_rank, 8, 4));
  EXPECT_EQ(2u, per_rank);
  WM_ASSERT_OK(wholememory_equal_entry_partition_plan(&per_rank, 0, 3));
  EXPECT_EQ(0u, per_rank);
  WM_ASSERT_OK(wholememory_equal_entry_partition_plan(&per_rank, 3, 8));
  EXPECT_EQ(1u, per_rank);
}

}  // namespace
}  // namespace memloom::wmtest

extern "C" int wm_c_header_check(void);

namespace memloom::wmtest {
namespace {

TEST(WholeMemoryHeaders, CompileAndLinkFromC) {
  EXPECT_EQ(0, wm_c_header_check());
}

}  // namespace
}  // namespace memloom::wmtest
