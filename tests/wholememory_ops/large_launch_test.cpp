// Gathers and scatters whose launches write more than the CPU backend's streaming threshold
// (16 MiB, hw/emulated/cpu_kernel_runner.cpp), so their rows are written with non-temporal stores
// (src/ops/streaming_copy.h): line-aligned 512-byte rows, and 320-byte rows whose output rows start
// off a 64-byte boundary (padding and a storage offset), so that heads and tails of rows are
// copied plainly around whole streamed lines. CONTINUOUS and CHUNKED tables on 2 ranks, checked
// element by element against the host reference like the other gather/scatter tests.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

constexpr size_t kLaunchBytes = size_t{17} << 20;  // above the 16 MiB threshold

struct Shape {
  int64_t columns;  // doubles per row
  int64_t padding;  // extra elements per output row
  int64_t offset;   // storage offset of the output, in elements
};

TEST(LargeLaunches, RowsWrittenAroundTheCachesMatchTheReference) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [&](const testing::RankContext&,
                                                         wholememory_comm_t comm) {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    // The same seed on both ranks: they scatter the same rows with the same values.
    std::mt19937_64 rng(run_seed() + 17);
    const int64_t table_rows = 3001;
    for (const auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
      for (const Shape shape : {Shape{64, 0, 0}, Shape{40, 3, 1}}) {
        SCOPED_TRACE("type " + std::to_string(type) + ", " + std::to_string(shape.columns) +
                     " columns");
        auto desc = matrix_desc(table_rows, shape.columns, shape.columns, 0, WHOLEMEMORY_DT_DOUBLE);
        wholememory_tensor_t table = nullptr;
        OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_DEVICE));
        const RootValue values = seeded_values(rng(), WHOLEMEMORY_DT_DOUBLE);
        fill_table(table, values, comm);
        const size_t rows = kLaunchBytes / (static_cast<size_t>(shape.columns) * 8) + 1;
        const OutputLayout layout{WHOLEMEMORY_DT_DOUBLE, WHOLEMEMORY_DT_INT64, shape.padding,
                                  shape.offset};
        check_gather(table, random_indices(rng, rows, table_rows, 40), layout, values, stream);

        // Both ranks scatter the same rows (duplicates and negatives included) at once.
        const auto written = random_indices(rng, rows, table_rows, 40);
        const uint64_t scatter_seed = rng();
        OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
        scatter_rows(table, written, layout, scatter_seed, stream);
        OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
        const RootValue now =
            after_scatter(table, written, WHOLEMEMORY_DT_DOUBLE, scatter_seed, values);
        std::vector<int64_t> every(table_rows);
        for (int64_t i = 0; i < table_rows; ++i) every[i] = i;
        check_gather(table, every, {WHOLEMEMORY_DT_DOUBLE}, now, stream);
        OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
        OPS_EXPECT_OK(wholememory_destroy_tensor(table));
      }
    }
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::opstest
