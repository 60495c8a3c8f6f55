// DISTRIBUTED gather and scatter route their indices on the device (count rows per owning rank,
// then place each row in its owner's bucket), and so does HIERARCHY's first stage (each row to my
// node's gateway for its owner's node): long lists that span every owner, with duplicates and
// negatives, int32 and int64 indices, partitions of uneven sizes with an empty one (on two nodes
// also a node without entries, and nodes of 2 and 1 ranks), sub-tensors, and the first bad index
// of a list reported in list order.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "src/base/log.h"
#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

constexpr int64_t kRows = 1033;

// 3 ranks; one of them holds no entry (first, middle or last), the others uneven shares. One
// test per plan: each makes its own table (on HIERARCHY, with two communicators of its own), and
// three in one test ran close to the test's time limit on a loaded GPU machine.
struct Plan {
  const char* name;
  size_t entries[3];
};
const Plan kPlans[] = {
    {"EmptyMiddleRank", {700, 0, 333}},
    {"EmptyFirstRank", {0, 500, 533}},
    {"EmptyLastRank", {1, 1032, 0}},
};

void check_long_lists(wholememory_memory_type_t type, int nodes, const Plan& plan) {
  auto results = run_with_comm(ranks_on_nodes(3, nodes), [&](const testing::RankContext& me,
                                                             wholememory_comm_t comm) {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    const uint64_t seed = run_seed() + 90;
    std::mt19937_64 rng(seed + static_cast<uint64_t>(me.rank) * 104729);
    auto desc = matrix_desc(kRows, 5, 6, 0, WHOLEMEMORY_DT_FLOAT);
    size_t entries[3] = {plan.entries[0], plan.entries[1], plan.entries[2]};
    wholememory_tensor_t table = nullptr;
    OPS_ASSERT_OK(
        wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_DEVICE, entries));
    const RootValue values = seeded_values(seed + 1, WHOLEMEMORY_DT_FLOAT);
    fill_table(table, values, comm);

    // Every rank owns about a third of 40000 rows asked for, each row ~40 times; 1 in 7 skipped.
    for (const auto index_dtype : {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}) {
      check_gather(table, random_indices(rng, 40000, kRows, 7),
                   {WHOLEMEMORY_DT_HALF, index_dtype, 1, 2}, values, stream);
    }
    // Only negative indices, and a single row.
    check_gather(table, std::vector<int64_t>(100, -1), {WHOLEMEMORY_DT_FLOAT}, values, stream);
    check_gather(table, {kRows - 1}, {WHOLEMEMORY_DT_FLOAT}, values, stream);
    // A sub-tensor whose rows start inside a partition, and leave out columns.
    wholememory_tensor_t sub = nullptr;
    int64_t starts[] = {650, 1}, ends[] = {kRows, 4};
    OPS_ASSERT_OK(wholememory_tensor_get_subtensor(table, starts, ends, &sub));
    check_gather(sub, random_indices(rng, 5000, kRows - starts[0], 11),
                 {WHOLEMEMORY_DT_DOUBLE, WHOLEMEMORY_DT_INT}, values, stream);

    // Every rank scatters 20000 random rows (duplicates within and across ranks, negatives):
    // a row's value depends only on its index, so whichever duplicate lands, the table agrees.
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));  // everyone has read the old rows
    const uint64_t scatter_seed = seed + 2;
    std::vector<int64_t> everyone;
    std::vector<int64_t> mine;
    for (int r = 0; r < 3; ++r) {
      std::mt19937_64 rank_rng(seed + 3 + static_cast<uint64_t>(r));
      auto theirs = random_indices(rank_rng, 20000, kRows, 9);
      everyone.insert(everyone.end(), theirs.begin(), theirs.end());
      if (r == me.rank) mine = std::move(theirs);
    }
    scatter_rows(table, mine,
                 {WHOLEMEMORY_DT_DOUBLE, me.rank == 1 ? WHOLEMEMORY_DT_INT : WHOLEMEMORY_DT_INT64},
                 scatter_seed, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    const RootValue now =
        after_scatter(table, everyone, WHOLEMEMORY_DT_DOUBLE, scatter_seed, values);
    check_gather(table, every_row(kRows), {WHOLEMEMORY_DT_FLOAT}, now, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(sub));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

class UnevenPartitions : public ::testing::TestWithParam<Plan> {};

TEST_P(UnevenPartitions, DistributedLongLists) {
  check_long_lists(WHOLEMEMORY_MT_DISTRIBUTED, 1, GetParam());
}

// 3 ranks on 2 nodes (one node of 2 ranks, whose gateways split the nodes, one of 1).
TEST_P(UnevenPartitions, HierarchyLongListsOnTwoNodes) {
  check_long_lists(WHOLEMEMORY_MT_HIERARCHY, 2, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Plans, UnevenPartitions, ::testing::ValuesIn(kPlans),
                         [](const ::testing::TestParamInfo<Plan>& info) {
                           return std::string(info.param.name);
                         });

// Rank 1's list holds three indices past the table, the first of them (in list order) neither the
// smallest nor the largest: every rank names that one, and no output row is written.
void check_first_bad_index_reported(wholememory_memory_type_t type, int ranks, int nodes) {
  auto results = run_with_comm(
      ranks_on_nodes(ranks, nodes), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        const int64_t rows = 300;
        auto desc = matrix_desc(rows, 4, 4, 0, WHOLEMEMORY_DT_INT);
        wholememory_tensor_t table = nullptr;
        OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_HOST));
        const RootValue values = seeded_values(run_seed() + 95, WHOLEMEMORY_DT_INT);
        fill_table(table, values, comm);
        std::mt19937_64 rng(run_seed() + 96 + static_cast<uint64_t>(me.rank));
        std::vector<int64_t> indices = random_indices(rng, 30000, rows, 5);
        if (me.rank == 1) {
          indices[9000] = rows + 40;
          indices[12000] = rows + 3;
          indices[16000] = rows + 900;
        }
        for (const auto index_dtype : {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}) {
          SCOPED_TRACE("index dtype " + std::to_string(index_dtype));
          const size_t width = index_dtype == WHOLEMEMORY_DT_INT ? 4 : 8;
          Bytes raw(indices.size() * width);
          for (size_t i = 0; i < indices.size(); ++i) {
            const int32_t narrow = static_cast<int32_t>(indices[i]);
            std::memcpy(raw.data() + i * width,
                        width == 4 ? static_cast<const void*>(&narrow) : &indices[i], width);
          }
          UserBuffer index_memory(raw.size());
          index_memory.upload(raw);
          UserBuffer output(indices.size() * 16);
          output.upload(Bytes(indices.size() * 16, 0));
          auto index_desc = array_desc(static_cast<int64_t>(indices.size()), 0, index_dtype);
          auto output_desc =
              matrix_desc(static_cast<int64_t>(indices.size()), 4, 4, 0, WHOLEMEMORY_DT_INT);
          wholememory_tensor_t index_tensor = nullptr, output_tensor = nullptr;
          OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&index_tensor, index_memory.data(),
                                                             &index_desc));
          OPS_ASSERT_OK(
              wholememory_make_tensor_from_pointer(&output_tensor, output.data(), &output_desc));
          const std::string expected =
              (me.rank == 1 ? std::string("this rank") : std::string("rank 1")) + " passed index " +
              std::to_string(rows + 40) + ", past the table's " + std::to_string(rows) + " rows";
          EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                    wholememory_gather(table, index_tensor, output_tensor, nullptr, nullptr));
          EXPECT_NE(std::string::npos, log::last_error().find(expected)) << log::last_error();
          EXPECT_EQ(Bytes(indices.size() * 16, 0), output.download());
          EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                    wholememory_scatter(output_tensor, index_tensor, table, nullptr, nullptr));
          EXPECT_NE(std::string::npos, log::last_error().find(expected)) << log::last_error();
          OPS_EXPECT_OK(wholememory_destroy_tensor(index_tensor));
          OPS_EXPECT_OK(wholememory_destroy_tensor(output_tensor));
        }
        // Nothing was written: the table still holds its values.
        check_gather(table, every_row(rows), {WHOLEMEMORY_DT_INT}, values, nullptr);
        OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
        OPS_EXPECT_OK(wholememory_destroy_tensor(table));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(DistributedRouting, TheFirstBadIndexInListOrderIsReported) {
  check_first_bad_index_reported(WHOLEMEMORY_MT_DISTRIBUTED, 2, 1);
}

TEST(HierarchyRouting, TheFirstBadIndexInListOrderIsReported) {
  check_first_bad_index_reported(WHOLEMEMORY_MT_HIERARCHY, 4, 2);
}

}  // namespace
}  // namespace memloom::opstest
