// Caller-given partitions (rank_entry_partition) where a later rank holds more than rank 0: the
// owner of a row can then not be found by dividing by rank 0's size, so the global reference
// must say so (same_chunk false) and gather/scatter must find owners from the offsets.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "src/wholememory/partition_plan.h"
#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wholememory::PartitionPlan;
using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

bool same_chunk_of(std::vector<size_t> entries) {
  size_t total = 0;
  for (size_t e : entries) total += e;
  return PartitionPlan::from_entries(entries.data(), static_cast<int>(entries.size()), total * 4, 4)
      .same_chunk;
}

TEST(PartitionPlanSameChunk, DecidedFromTheSizes) {
  EXPECT_TRUE(same_chunk_of({5, 5, 5}));
  EXPECT_TRUE(same_chunk_of({5, 5, 2}));
  EXPECT_TRUE(same_chunk_of({5, 3, 0}));
  EXPECT_TRUE(same_chunk_of({5}));
  EXPECT_FALSE(same_chunk_of({5, 7}));  // rank 1 starts at 1 * 5 but ends past 2 * 5
  EXPECT_FALSE(same_chunk_of({497238, 502762}));
  EXPECT_FALSE(same_chunk_of({5, 3, 2}));  // rank 2 starts at 8, not 10
  EXPECT_FALSE(same_chunk_of({5, 0, 5}));
  EXPECT_FALSE(same_chunk_of({0, 5}));
  EXPECT_TRUE(PartitionPlan::equal(1000 * 8, 8, 3).same_chunk);
  EXPECT_TRUE(PartitionPlan::equal(2 * 8, 8, 4).same_chunk);  // the last two ranks are empty
}

class UnevenChunks : public ::testing::TestWithParam<wholememory_memory_location_t> {};

// 497,238 / 502,762 rows of one int32 each, and a small 5 / 7 table of padded rows.
TEST_P(UnevenChunks, LaterRankLargerThanRankZeroGathersAndScatters) {
  const auto location = GetParam();
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        memloom_stream_t stream = nullptr;
        ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
        const uint64_t seed = run_seed() + 23;
        std::mt19937_64 rng(seed + static_cast<uint64_t>(me.rank));
        struct Shape {
          size_t entries[2];
          int64_t columns, stride;
        };
        for (Shape shape : {Shape{{497238, 502762}, 1, 1}, Shape{{5, 7}, 3, 4}}) {
          const int64_t rows = static_cast<int64_t>(shape.entries[0] + shape.entries[1]);
          SCOPED_TRACE(std::to_string(rows) + " rows");
          auto desc = shape.columns == 1
                          ? array_desc(rows, 0, WHOLEMEMORY_DT_INT)
                          : matrix_desc(rows, shape.columns, shape.stride, 0, WHOLEMEMORY_DT_INT);
          wholememory_tensor_t table = nullptr;
          OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, WHOLEMEMORY_MT_CHUNKED,
                                                  location, shape.entries));
          wholememory_gref_t gref{};
          OPS_ASSERT_OK(wholememory_tensor_get_global_reference(table, &gref));
          EXPECT_FALSE(gref.stride != 0 && gref.same_chunk)
              << "a reference by division would send the last rows to a third rank";
          size_t counts[2] = {};
          OPS_ASSERT_OK(wholememory_tensor_get_entry_partition_sizes(counts, table));
          EXPECT_EQ(shape.entries[0], counts[0]);
          EXPECT_EQ(shape.entries[1], counts[1]);

          const RootValue values = seeded_values(seed, WHOLEMEMORY_DT_INT);
          fill_table(table, values, comm);
          std::vector<int64_t> tail;  // the rows a division by rank 0's size gets wrong
          for (int64_t r = 2 * static_cast<int64_t>(shape.entries[0]); r < rows; ++r)
            tail.push_back(r);
          check_gather(table, tail, {WHOLEMEMORY_DT_INT}, values, stream);
          check_gather(table, random_indices(rng, 3000, rows, 0), {WHOLEMEMORY_DT_INT64}, values,
                       stream);

          // Rank r writes rows with row % 2 == r: the tail and a random sample of the rest (every
          // row of the small table), then both ranks read back what was written.
          std::vector<int64_t> written = tail;
          const bool small = rows < 100;
          if (small) {
            written = every_row(rows);
          } else {
            std::mt19937_64 shared(seed + 2);  // the same sample on both ranks
            const auto sample = random_indices(shared, 4000, rows, 0);
            written.insert(written.end(), sample.begin(), sample.end());
          }
          std::vector<int64_t> mine;
          for (int64_t r : written) {
            if (r % 2 == me.rank) mine.push_back(r);
          }
          OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
          scatter_rows(table, mine, {WHOLEMEMORY_DT_INT}, seed + 1, stream);
          OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
          const RootValue now = after_scatter(table, written, WHOLEMEMORY_DT_INT, seed + 1, values);
          check_gather(table, small ? every_row(rows) : written, {WHOLEMEMORY_DT_INT}, now, stream);
          OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
          OPS_EXPECT_OK(wholememory_destroy_tensor(table));
        }
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(Ops, UnevenChunks,
                         ::testing::Values(WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST),
                         [](const ::testing::TestParamInfo<wholememory_memory_location_t>& info) {
                           return std::string(info.param == WHOLEMEMORY_ML_DEVICE ? "Device"
                                                                                  : "Host");
                         });

}  // namespace
}  // namespace memloom::opstest
