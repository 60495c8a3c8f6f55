// Gather and scatter against a host reference, with fresh random data each run: every dtype pair
// on a one-rank table, row widths from 1 to 1000 elements, and every memory type x location on
// 1 to 8 ranks over one and two emulated nodes (sub-tensors, strided outputs with offsets,
// duplicate and negative indices, empty lists, rows owned by other ranks).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

const wholememory_dtype_t kFloatTypes[] = {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_HALF,
                                           WHOLEMEMORY_DT_DOUBLE, WHOLEMEMORY_DT_BF16};
const wholememory_dtype_t kIntegerTypes[] = {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64,
                                             WHOLEMEMORY_DT_INT16, WHOLEMEMORY_DT_INT8};

std::vector<wholememory_dtype_t> same_family(wholememory_dtype_t dtype) {
  if (wholememory_dtype_is_floating_number(dtype)) {
    return {std::begin(kFloatTypes), std::end(kFloatTypes)};
  }
  return {std::begin(kIntegerTypes), std::end(kIntegerTypes)};
}

wholememory_tensor_t create_table(wholememory_comm_t comm, wholememory_tensor_description_t desc,
                                  wholememory_memory_type_t type,
                                  wholememory_memory_location_t location) {
  wholememory_tensor_t tensor = nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_create_tensor(&tensor, &desc, comm, type, location));
  return tensor;
}

TEST(GatherScatter, EveryDtypePairAndIndexTypeOnOneRank) {
  auto results = run_with_comm(
      ranks_on_nodes(1, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        memloom_stream_t stream = nullptr;
        ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
        std::mt19937_64 rng(run_seed());
        std::vector<wholememory_dtype_t> all(std::begin(kFloatTypes), std::end(kFloatTypes));
        all.insert(all.end(), std::begin(kIntegerTypes), std::end(kIntegerTypes));
        for (const auto dtype : all) {
          SCOPED_TRACE("table dtype " + std::to_string(dtype));
          const uint64_t seed = rng();
          // 13 columns in rows of 15: neither rows nor their starts are multiples of 16 bytes.
          for (const bool matrix : {true, false}) {
            auto desc = matrix ? matrix_desc(301, 13, 15, 0, dtype) : array_desc(500, 0, dtype);
            wholememory_tensor_t table =
                create_table(comm, desc, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_DEVICE);
            ASSERT_NE(nullptr, table);
            const RootValue values = seeded_values(seed, dtype);
            fill_table(table, values, comm);
            for (const auto out : same_family(dtype)) {
              for (const auto index_dtype : {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}) {
                const auto indices = random_indices(rng, 200, desc.sizes[0], 10);
                check_gather(table, indices, {out, index_dtype, matrix ? 3 : 0, 5}, values, stream);
              }
            }
            // Scatter from every input type of the family, then read everything back unconverted.
            RootValue now = values;
            for (const auto in : same_family(dtype)) {
              const uint64_t scatter_seed = rng();
              const auto written = random_indices(rng, 60, desc.sizes[0], 6);
              scatter_rows(table, written, {in, WHOLEMEMORY_DT_INT, matrix ? 2 : 0, 1},
                           scatter_seed, stream);
              now = after_scatter(table, written, in, scatter_seed, now);
              check_gather(table, every_row(desc.sizes[0]), {dtype}, now, stream);
            }
            OPS_EXPECT_OK(wholememory_destroy_tensor(table));
          }
        }
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(GatherScatter, RowsOfOneToAThousandElements) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        std::mt19937_64 rng(run_seed() + 1);
        for (const int64_t columns : {1, 2, 3, 7, 17, 64, 255, 1000}) {
          SCOPED_TRACE("columns " + std::to_string(columns));
          const uint64_t seed = rng();
          for (const auto dtype : {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_HALF}) {
            auto desc = matrix_desc(150, columns, columns, 0, dtype);
            wholememory_tensor_t table =
                create_table(comm, desc, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_DEVICE);
            const RootValue values = seeded_values(seed, dtype);
            fill_table(table, values, comm);
            // The default stream (NULL) this time.
            check_gather(table, random_indices(rng, 120, 150, 0), {WHOLEMEMORY_DT_FLOAT}, values,
                         nullptr);
            check_gather(table, random_indices(rng, 50, 150, 5), {WHOLEMEMORY_DT_BF16}, values,
                         nullptr);
            OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
            OPS_EXPECT_OK(wholememory_destroy_tensor(table));
          }
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(GatherScatter, LargeIndexListsAndEmptyOnes) {
  auto results = run_with_comm(
      ranks_on_nodes(1, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        memloom_stream_t stream = nullptr;
        ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
        std::mt19937_64 rng(run_seed() + 2);
        auto desc = matrix_desc(4000, 5, 5, 0, WHOLEMEMORY_DT_INT16);
        wholememory_tensor_t table =
            create_table(comm, desc, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST);
        const RootValue values = seeded_values(rng(), WHOLEMEMORY_DT_INT16);
        fill_table(table, values, comm);
        check_gather(table, random_indices(rng, 400000, 4000, 50), {WHOLEMEMORY_DT_INT}, values,
                     stream);
        check_gather(table, {}, {WHOLEMEMORY_DT_INT16}, values, stream);
        scatter_rows(table, {}, {WHOLEMEMORY_DT_INT8}, 1, stream);
        check_gather(table, {0, 3999}, {WHOLEMEMORY_DT_INT16}, values, stream);
        OPS_EXPECT_OK(wholememory_destroy_tensor(table));
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

using Case = TableCase;

class TypeLocation : public ::testing::TestWithParam<Case> {};

// Each rank gathers its own random rows (so most rows belong to other ranks), from the whole
// table and from a sub-tensor, then the ranks scatter disjoint row sets of a sub-tensor and
// everybody reads the whole table back.
TEST_P(TypeLocation, GatherAndScatterMatchTheReference) {
  const Case c = GetParam();
  auto results = run_with_comm(ranks_on_nodes(c.ranks, c.nodes), [&](const testing::RankContext& me,
                                                                     wholememory_comm_t comm) {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    const uint64_t seed = run_seed() + 3;
    std::mt19937_64 rng(seed + static_cast<uint64_t>(me.rank) * 7919);
    const int64_t rows = 97 * c.ranks + 5;
    auto desc = matrix_desc(rows, 19, 21, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_tensor_t table = create_table(comm, desc, c.type, c.location);
    ASSERT_NE(nullptr, table);
    const RootValue values = seeded_values(seed, WHOLEMEMORY_DT_FLOAT);
    fill_table(table, values, comm);

    check_gather(table, random_indices(rng, 300, rows, 8), {WHOLEMEMORY_DT_FLOAT}, values, stream);
    check_gather(table, random_indices(rng, 100, rows, 0),
                 {WHOLEMEMORY_DT_HALF, WHOLEMEMORY_DT_INT, 3, 7}, values, stream);
    check_gather(table, {}, {WHOLEMEMORY_DT_FLOAT}, values, stream);
    wholememory_tensor_t sub = nullptr;
    int64_t starts[] = {7, 2}, ends[] = {rows - 3, 15};
    OPS_ASSERT_OK(wholememory_tensor_get_subtensor(table, starts, ends, &sub));
    check_gather(sub, random_indices(rng, 150, rows - 10, 9), {WHOLEMEMORY_DT_DOUBLE}, values,
                 stream);

    // Rank r writes sub-tensor rows i with i % (2 * ranks) == r (shuffled, some twice).
    auto rows_of = [&](int rank) {
      std::vector<int64_t> mine;
      for (int64_t i = rank; i < rows - 10; i += 2 * c.ranks) mine.push_back(i);
      return mine;
    };
    std::vector<int64_t> written = rows_of(me.rank);
    std::shuffle(written.begin(), written.end(), rng);
    if (written.size() > 3) written.insert(written.end(), written.begin(), written.begin() + 3);
    const uint64_t scatter_seed = seed + 11;
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));  // everyone has read the old rows
    scatter_rows(sub, written, {WHOLEMEMORY_DT_HALF, WHOLEMEMORY_DT_INT, 1, 2}, scatter_seed,
                 stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    std::vector<int64_t> everyone;
    for (int r = 0; r < c.ranks; ++r) {
      const auto theirs = rows_of(r);
      everyone.insert(everyone.end(), theirs.begin(), theirs.end());
    }
    const RootValue now = after_scatter(sub, everyone, WHOLEMEMORY_DT_HALF, scatter_seed, values);
    check_gather(table, every_row(rows), {WHOLEMEMORY_DT_FLOAT}, now, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(sub));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));

    // A 1-D table of integers, narrowed on the way out.
    auto array = array_desc(50 * c.ranks + 1, 0, WHOLEMEMORY_DT_INT64);
    table = create_table(comm, array, c.type, c.location);
    const RootValue numbers = seeded_values(seed + 5, WHOLEMEMORY_DT_INT64);
    fill_table(table, numbers, comm);
    check_gather(table, random_indices(rng, 80, array.sizes[0], 7),
                 {WHOLEMEMORY_DT_INT16, WHOLEMEMORY_DT_INT, 0, 3}, numbers, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

constexpr auto kDevice = WHOLEMEMORY_ML_DEVICE;
constexpr auto kHost = WHOLEMEMORY_ML_HOST;
INSTANTIATE_TEST_SUITE_P(
    Ops, TypeLocation,
    ::testing::Values(
        Case{1, 1, WHOLEMEMORY_MT_CONTINUOUS, kDevice}, Case{1, 1, WHOLEMEMORY_MT_CHUNKED, kHost},
        Case{1, 1, WHOLEMEMORY_MT_DISTRIBUTED, kDevice},
        Case{1, 1, WHOLEMEMORY_MT_HIERARCHY, kHost}, Case{2, 1, WHOLEMEMORY_MT_CONTINUOUS, kDevice},
        Case{2, 1, WHOLEMEMORY_MT_CONTINUOUS, kHost}, Case{2, 1, WHOLEMEMORY_MT_CHUNKED, kDevice},
        Case{2, 1, WHOLEMEMORY_MT_CHUNKED, kHost}, Case{2, 1, WHOLEMEMORY_MT_DISTRIBUTED, kDevice},
        Case{2, 1, WHOLEMEMORY_MT_DISTRIBUTED, kHost},
        Case{2, 1, WHOLEMEMORY_MT_HIERARCHY, kDevice}, Case{2, 1, WHOLEMEMORY_MT_HIERARCHY, kHost},
        Case{4, 1, WHOLEMEMORY_MT_CONTINUOUS, kHost},
        Case{4, 2, WHOLEMEMORY_MT_DISTRIBUTED, kDevice},
        Case{4, 2, WHOLEMEMORY_MT_DISTRIBUTED, kHost},
        Case{4, 2, WHOLEMEMORY_MT_HIERARCHY, kDevice}, Case{4, 2, WHOLEMEMORY_MT_HIERARCHY, kHost},
        Case{8, 1, WHOLEMEMORY_MT_CHUNKED, kDevice}, Case{8, 1, WHOLEMEMORY_MT_DISTRIBUTED, kHost},
        Case{8, 2, WHOLEMEMORY_MT_DISTRIBUTED, kDevice},
        Case{8, 2, WHOLEMEMORY_MT_HIERARCHY, kDevice}, Case{3, 2, WHOLEMEMORY_MT_HIERARCHY, kHost}),
    table_case_name);

}  // namespace
}  // namespace memloom::opstest
