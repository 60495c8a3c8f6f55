// Gather and scatter over tables that exchange rows between ranks (DISTRIBUTED, HIERARCHY across
// nodes) and over tables loaded round robin: ranks with nothing to ask, many repeats of few rows,
// large lists, and rows that a round-robin load dealt to other ranks.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

wholememory_tensor_t create_table(wholememory_comm_t comm, wholememory_tensor_description_t desc,
                                  wholememory_memory_type_t type,
                                  wholememory_memory_location_t location) {
  wholememory_tensor_t tensor = nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_create_tensor(&tensor, &desc, comm, type, location));
  return tensor;
}

TEST(Exchange, RanksWithoutIndicesStillServeTheOthers) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        for (auto type : {WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY}) {
          std::mt19937_64 rng(run_seed() + me.rank);
          auto desc = matrix_desc(401, 9, 9, 0, WHOLEMEMORY_DT_BF16);
          wholememory_tensor_t table = create_table(comm, desc, type, WHOLEMEMORY_ML_DEVICE);
          const RootValue values = seeded_values(run_seed() + 20, WHOLEMEMORY_DT_BF16);
          fill_table(table, values, comm);
          const size_t count = me.rank % 2 == 0 ? 0 : 20000;
          check_gather(table, random_indices(rng, count, 401, 100), {WHOLEMEMORY_DT_FLOAT}, values,
                       nullptr);
          OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
          OPS_EXPECT_OK(wholememory_destroy_tensor(table));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(Exchange, ManyRepeatsOfFewRowsAcrossNodes) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [&](const testing::RankContext& me,
                                                         wholememory_comm_t comm) {
    std::mt19937_64 rng(run_seed() + 30 + me.rank);
    auto desc = matrix_desc(1000, 33, 35, 0, WHOLEMEMORY_DT_DOUBLE);
    wholememory_tensor_t table =
        create_table(comm, desc, WHOLEMEMORY_MT_HIERARCHY, WHOLEMEMORY_ML_HOST);
    const RootValue values = seeded_values(run_seed() + 31, WHOLEMEMORY_DT_DOUBLE);
    fill_table(table, values, comm);
    const std::vector<int64_t> few = {0, 999, 250, 251, 500, 750, 3};
    std::vector<int64_t> indices(5000);
    for (auto& index : indices) index = few[rng() % few.size()];
    check_gather(table, indices, {WHOLEMEMORY_DT_HALF, WHOLEMEMORY_DT_INT}, values, nullptr);
    // Every rank writes the same rows with the same values: any winner gives the same table.
    scatter_rows(table, indices, {WHOLEMEMORY_DT_FLOAT}, 77, nullptr);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    const RootValue now = after_scatter(table, few, WHOLEMEMORY_DT_FLOAT, 77, values);
    check_gather(table, random_indices(rng, 3000, 1000, 0), {WHOLEMEMORY_DT_DOUBLE}, now, nullptr);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(Exchange, LargeListsOnDistributedTables) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        std::mt19937_64 rng(run_seed() + 40 + me.rank);
        auto desc = matrix_desc(5000, 16, 16, 0, WHOLEMEMORY_DT_FLOAT);
        wholememory_tensor_t table =
            create_table(comm, desc, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_DEVICE);
        const RootValue values = seeded_values(run_seed() + 41, WHOLEMEMORY_DT_FLOAT);
        fill_table(table, values, comm);
        check_gather(table, random_indices(rng, 150000, 5000, 1000), {WHOLEMEMORY_DT_FLOAT}, values,
                     nullptr);
        OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
        OPS_EXPECT_OK(wholememory_destroy_tensor(table));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// A file of `entries` rows loaded with round_robin_size 3: blocks of 3 rows are dealt to the ranks
// in turn. The caller maps a file row to the storage row that holds it; gathering storage rows
// must return the file's rows, wherever the load put them.
struct RoundRobinCase {
  int ranks;
  int nodes;
  wholememory_memory_type_t type;
};

class RoundRobin : public ::testing::TestWithParam<RoundRobinCase> {};

TEST_P(RoundRobin, LoadedRowsGatherFromEveryRank) {
  const auto c = GetParam();
  constexpr int64_t kBlock = 3, kColumns = 6;
  const int64_t entries = kBlock * c.ranks * 8;
  const uint64_t seed = run_seed() + 50;
  const RootValue file_values = seeded_values(seed, WHOLEMEMORY_DT_INT);
  wmtest::TempDir dir;
  Bytes file(static_cast<size_t>(entries * kColumns) * 4);
  for (int64_t e = 0; e < entries; ++e) {
    for (int64_t col = 0; col < kColumns; ++col) {
      std::memcpy(file.data() + (e * kColumns + col) * 4, file_values(e, col).data(), 4);
    }
  }
  const std::string path = dir.file("table.bin");
  wmtest::write_file(path, file);

  auto results = run_with_comm(ranks_on_nodes(c.ranks, c.nodes), [&](const testing::RankContext& me,
                                                                     wholememory_comm_t comm) {
    auto desc = matrix_desc(entries, kColumns, kColumns, 0, WHOLEMEMORY_DT_INT);
    wholememory_tensor_t table = create_table(comm, desc, c.type, WHOLEMEMORY_ML_DEVICE);
    const char* files[] = {path.c_str()};
    OPS_ASSERT_OK(wholememory_load_from_file(wholememory_tensor_get_memory_handle(table), 0,
                                             kColumns * 4, kColumns * 4, files, 1, kBlock));
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    std::vector<size_t> offsets(c.ranks + 1);
    OPS_ASSERT_OK(wholememory_tensor_get_entry_offsets(offsets.data(), table));
    // File row f sits in block f / 3, dealt to rank (f / 3) % ranks, packed from its start.
    std::map<int64_t, int64_t> file_row_of_storage;
    auto storage_row = [&](int64_t f) {
      const int64_t block = f / kBlock;
      const int64_t owner = block % c.ranks;
      return static_cast<int64_t>(offsets[owner]) + (block / c.ranks) * kBlock + f % kBlock;
    };
    for (int64_t f = 0; f < entries; ++f) file_row_of_storage[storage_row(f)] = f;
    const RootValue stored = [&](int64_t row, int64_t column) {
      return file_values(file_row_of_storage.at(row), column);
    };
    std::mt19937_64 rng(seed + me.rank);
    std::vector<int64_t> indices;
    for (int64_t f : random_indices(rng, 500, entries, 0)) indices.push_back(storage_row(f));
    check_gather(table, indices, {WHOLEMEMORY_DT_INT64}, stored, nullptr);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(Ops, RoundRobin,
                         ::testing::Values(RoundRobinCase{2, 1, WHOLEMEMORY_MT_CONTINUOUS},
                                           RoundRobinCase{4, 2, WHOLEMEMORY_MT_DISTRIBUTED},
                                           RoundRobinCase{4, 2, WHOLEMEMORY_MT_HIERARCHY}));

}  // namespace
}  // namespace memloom::opstest
