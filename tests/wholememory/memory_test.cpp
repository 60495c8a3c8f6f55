// Allocations: every type x location on 1..8 ranks over one and two emulated nodes, with sizes
// that do not divide evenly and a granularity that is not a power of two; data written by each
// rank is read back through every mapping the type offers.
#include <gtest/gtest.h>

#include <vector>

#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

constexpr size_t kGranularity = 24;  // not a power of two
constexpr uint8_t kSeed = 7;

struct Case {
  int ranks;
  int nodes;
  wholememory_memory_type_t type;
  wholememory_memory_location_t location;
};

const char* type_name(wholememory_memory_type_t type) {
  switch (type) {
    case WHOLEMEMORY_MT_CONTINUOUS:
      return "Continuous";
    case WHOLEMEMORY_MT_CHUNKED:
      return "Chunked";
    case WHOLEMEMORY_MT_DISTRIBUTED:
      return "Distributed";
    default:
      return "Hierarchy";
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto& c = info.param;
  return std::string(type_name(c.type)) +
         (c.location == WHOLEMEMORY_ML_DEVICE ? "Device" : "Host") + std::to_string(c.ranks) +
         "ranks" + std::to_string(c.nodes) + "nodes";
}

bool maps_rank(const Case& c, const testing::RankContext& me, int rank) {
  switch (c.type) {
    case WHOLEMEMORY_MT_CONTINUOUS:
    case WHOLEMEMORY_MT_CHUNKED:
      return true;
    case WHOLEMEMORY_MT_DISTRIBUTED:
      return rank == me.rank;
    default:
      return rank * c.nodes / c.ranks == me.node_index;
  }
}

bool has_global_view(const Case& c) {
  return c.type == WHOLEMEMORY_MT_CONTINUOUS || c.type == WHOLEMEMORY_MT_CHUNKED ||
         (c.type == WHOLEMEMORY_MT_HIERARCHY && c.nodes == 1);
}

// Checks the partition queries and every mapping of `handle` against the equal plan of `entries`.
void check_allocation(const Case& c, const testing::RankContext& me, wholememory_handle_t handle,
                      size_t entries) {
  const int world = c.ranks;
  size_t per_rank = 0;
  WM_ASSERT_OK(wholememory_equal_entry_partition_plan(&per_rank, entries, world));
  std::vector<size_t> sizes(world), offsets(world + 1);
  WM_ASSERT_OK(wholememory_get_rank_partition_sizes(sizes.data(), handle));
  WM_ASSERT_OK(wholememory_get_rank_partition_offsets(offsets.data(), handle));
  for (int r = 0; r < world; ++r) {
    const size_t first = std::min(r * per_rank, entries),
                 last = std::min((r + 1) * per_rank, entries);
    EXPECT_EQ((last - first) * kGranularity, sizes[r]) << "rank " << r;
    EXPECT_EQ(first * kGranularity, offsets[r]) << "rank " << r;
  }
  EXPECT_EQ(entries * kGranularity, offsets[world]);

  void* local = nullptr;
  size_t local_size = 0, local_offset = 0, value = 0;
  WM_ASSERT_OK(wholememory_get_local_memory(&local, &local_size, &local_offset, handle));
  EXPECT_EQ(sizes[me.rank], local_size);
  EXPECT_EQ(offsets[me.rank], local_offset);
  WM_ASSERT_OK(wholememory_get_local_size(&value, handle));
  EXPECT_EQ(local_size, value);
  WM_ASSERT_OK(wholememory_get_local_offset(&value, handle));
  EXPECT_EQ(local_offset, value);

  std::vector<void*> pointers(world, nullptr);
  for (int r = 0; r < world; ++r) {
    size_t size = 0, offset = 0;
    const auto code = wholememory_get_rank_memory(&pointers[r], &size, &offset, r, handle);
    if (!maps_rank(c, me, r)) {
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, code) << "rank " << r << " should not be mapped";
      continue;
    }
    WM_ASSERT_OK(code);
    EXPECT_EQ(sizes[r], size);
    EXPECT_EQ(offsets[r], offset);
    EXPECT_EQ(-1, first_mismatch(pointers[r], offset, size, kSeed))
        << "rank " << r << "'s partition";
  }
  void* ignored = nullptr;
  EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
            wholememory_get_rank_memory(&ignored, nullptr, nullptr, -1, handle));
  EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
            wholememory_get_rank_memory(&ignored, nullptr, nullptr, world, handle));

  void* global = nullptr;
  // CHUNKED HOST memory has a global pointer too, as the published API page says.
  const bool contiguous = c.type == WHOLEMEMORY_MT_CONTINUOUS ||
                          (c.type == WHOLEMEMORY_MT_HIERARCHY && c.nodes == 1) ||
                          (c.type == WHOLEMEMORY_MT_CHUNKED && c.location == WHOLEMEMORY_ML_HOST);
  if (contiguous) {
    WM_ASSERT_OK(wholememory_get_global_pointer(&global, handle));
    EXPECT_EQ(-1, first_mismatch(global, 0, offsets[world], kSeed));
  } else {
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_pointer(&global, handle));
  }

  wholememory_gref_t gref{};
  if (!has_global_view(c)) {
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_reference(&gref, handle));
    return;
  }
  WM_ASSERT_OK(wholememory_get_global_reference(&gref, handle));
  EXPECT_EQ(world, gref.world_size);
  EXPECT_TRUE(gref.same_chunk);
  std::vector<size_t> table_offsets(world + 1);
  read_memory(table_offsets.data(), gref.rank_memory_offsets,
              table_offsets.size() * sizeof(size_t));
  EXPECT_EQ(offsets, table_offsets);
  if (!contiguous) {
    EXPECT_EQ(sizes[0], gref.stride);
    std::vector<void*> table(world);
    read_memory(table.data(), gref.pointer, world * sizeof(void*));
    for (int r = 0; r < world; ++r) {
      if (sizes[r] > 0) {
        EXPECT_EQ(pointers[r], table[r]) << "rank " << r;
      }
    }
  } else {
    EXPECT_EQ(0u, gref.stride);
    EXPECT_EQ(global, gref.pointer);
  }
}

class MemoryTypes : public ::testing::TestWithParam<Case> {};

TEST_P(MemoryTypes, PartitionsAreWrittenLocallyAndReadThroughEveryMapping) {
  const Case c = GetParam();
  auto results = run_with_comm(ranks_on_nodes(c.ranks, c.nodes), [&](const testing::RankContext& me,
                                                                     wholememory_comm_t comm) {
    const size_t entries = 37 * c.ranks + 5;  // not a multiple of the rank count
    wholememory_handle_t handle = nullptr;
    WM_ASSERT_OK(wholememory_malloc(&handle, entries * kGranularity, comm, c.type, c.location,
                                    kGranularity));
    EXPECT_EQ(c.type, wholememory_get_memory_type(handle));
    EXPECT_EQ(c.location, wholememory_get_memory_location(handle));
    EXPECT_EQ(WHOLEMEMORY_DB_NCCL, wholememory_get_distributed_backend(handle));
    EXPECT_EQ(entries * kGranularity, wholememory_get_total_size(handle));
    EXPECT_EQ(kGranularity, wholememory_get_data_granularity(handle));
    wholememory_comm_t owner = nullptr;
    WM_ASSERT_OK(wholememory_get_communicator(&owner, handle));
    EXPECT_EQ(comm, owner);

    fill_local_partition(handle, kSeed);
    WM_ASSERT_OK(wholememory_communicator_barrier(comm));
    check_allocation(c, me, handle, entries);

    wholememory_comm_t local = nullptr, cross = nullptr;
    if (c.type == WHOLEMEMORY_MT_HIERARCHY) {
      WM_ASSERT_OK(wholememory_get_local_communicator(&local, handle));
      WM_ASSERT_OK(wholememory_get_cross_communicator(&cross, handle));
      int size = 0;
      WM_ASSERT_OK(wholememory_communicator_get_size(&size, local));
      EXPECT_EQ(me.local_size, size);
      WM_ASSERT_OK(wholememory_communicator_get_size(&size, cross));
      EXPECT_EQ(c.nodes, size);
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_communicator(local));
    } else {
      EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED, wholememory_get_local_communicator(&local, handle));
      EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED, wholememory_get_cross_communicator(&cross, handle));
    }

    WM_ASSERT_OK(wholememory_communicator_barrier(comm));  // nobody reads while others free
    WM_ASSERT_OK(wholememory_free(handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(handle));
    EXPECT_EQ(0u, wholememory_get_total_size(handle));
    int size = 0;
    if (local != nullptr) {
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_size(&size, local));
    }
    WM_EXPECT_OK(wholememory_destroy_communicator(comm));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const wholememory_memory_type_t types[] = {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED,
                                             WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY};
  for (auto location : {WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST}) {
    for (auto type : types) {
      for (int ranks : {1, 2, 4}) cases.push_back({ranks, 1, type, location});
      const bool spans_nodes_ok =
          type == WHOLEMEMORY_MT_DISTRIBUTED || type == WHOLEMEMORY_MT_HIERARCHY;
      if (spans_nodes_ok) {
        for (int ranks : {2, 4}) cases.push_back({ranks, 2, type, location});
      }
    }
  }
  // The 8-rank runs cover the key paths only.
  cases.push_back({8, 1, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_DEVICE});
  cases.push_back({8, 1, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_HOST});
  cases.push_back({8, 2, WHOLEMEMORY_MT_HIERARCHY, WHOLEMEMORY_ML_DEVICE});
  cases.push_back({8, 2, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_HOST});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(WholeMemory, MemoryTypes, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace memloom::wmtest
