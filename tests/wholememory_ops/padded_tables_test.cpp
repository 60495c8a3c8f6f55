// Tables whose row stride is wider than their columns (padded embedding tables), set up the way
// upstream's programs do it: the allocation sized by wholememory_get_memory_size_from_tensor with
// one padded row as the granularity, a tensor made over it from its handle, and operands whose
// buffers are sized by the same functions. Also the description size functions themselves.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"
#include "wholememory/tensor_description.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

TEST(TensorDescriptionSizes, CountRowsTimesStride) {
  int64_t sizes[2] = {10, 11};
  auto matrix = wholememory_create_matrix_desc(sizes, 12, 0, WHOLEMEMORY_DT_FLOAT);
  EXPECT_EQ(120, wholememory_get_memory_element_count_from_matrix(&matrix));
  EXPECT_EQ(480, wholememory_get_memory_size_from_matrix(&matrix));
  wholememory_tensor_description_t tensor;
  wholememory_copy_matrix_desc_to_tensor(&tensor, &matrix);
  EXPECT_EQ(120, wholememory_get_memory_element_count_from_tensor(&tensor));
  EXPECT_EQ(480, wholememory_get_memory_size_from_tensor(&tensor));

  // Three dimensions: the outermost stride covers everything inside it, padding included.
  wholememory_tensor_description_t cube;
  wholememory_initialize_tensor_desc(&cube);
  cube.dim = 3;
  cube.dtype = WHOLEMEMORY_DT_HALF;
  cube.sizes[0] = 4, cube.sizes[1] = 3, cube.sizes[2] = 5;
  cube.strides[0] = 20, cube.strides[1] = 6, cube.strides[2] = 1;
  EXPECT_EQ(80, wholememory_get_memory_element_count_from_tensor(&cube));
  EXPECT_EQ(160, wholememory_get_memory_size_from_tensor(&cube));

  wholememory_tensor_description_t scalar;
  wholememory_initialize_tensor_desc(&scalar);
  scalar.dtype = WHOLEMEMORY_DT_DOUBLE;
  EXPECT_EQ(1, wholememory_get_memory_element_count_from_tensor(&scalar));
  EXPECT_EQ(8, wholememory_get_memory_size_from_tensor(&scalar));
  scalar.dim = -1;
  EXPECT_EQ(-1, wholememory_get_memory_element_count_from_tensor(&scalar));
  scalar.dim = WHOLEMEMORY_MAX_TENSOR_DIM + 1;
  EXPECT_EQ(-1, wholememory_get_memory_element_count_from_tensor(&scalar));
}

TEST(TensorDescriptionSizes, UnknownDtypeAndConversionsAsUpstream) {
  EXPECT_EQ(0u, wholememory_dtype_get_element_size(WHOLEMEMORY_DT_UNKNOWN));
  EXPECT_EQ(static_cast<size_t>(-1), wholememory_dtype_get_element_size(WHOLEMEMORY_DT_COUNT));
  wholememory_tensor_description_t tensor = array_desc(5, 0, WHOLEMEMORY_DT_UNKNOWN);
  wholememory_array_description_t array{};
  wholememory_matrix_description_t matrix{};
  EXPECT_FALSE(wholememory_convert_tensor_desc_to_array(&array, &tensor));
  EXPECT_FALSE(wholememory_convert_tensor_desc_to_matrix(&matrix, &tensor));
  tensor.dtype = WHOLEMEMORY_DT_INT;
  EXPECT_TRUE(wholememory_convert_tensor_desc_to_array(&array, &tensor));
  EXPECT_TRUE(wholememory_convert_tensor_desc_to_matrix(&matrix, &tensor));

  // A size-1 inner dimension squeezes only when its stride equals the next dimension's.
  auto wide = matrix_desc(1, 5, 5, 0, WHOLEMEMORY_DT_FLOAT);
  EXPECT_FALSE(wholememory_squeeze_tensor(&wide, 0));
  wide.strides[0] = 1;
  EXPECT_TRUE(wholememory_squeeze_tensor(&wide, 0));
  EXPECT_EQ(1, wide.dim);
  EXPECT_EQ(5, wide.sizes[0]);
}

using Case = TableCase;

class PaddedTable : public ::testing::TestWithParam<Case> {};

// 11 floats in rows of 12, and of 13 in the operands: every stride differs from its column count.
TEST_P(PaddedTable, AllocatedFromTheDescriptionGathersAndScatters) {
  const Case c = GetParam();
  auto results = run_with_comm(ranks_on_nodes(c.ranks, c.nodes), [&](const testing::RankContext& me,
                                                                     wholememory_comm_t comm) {
    memloom_stream_t stream = nullptr;
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    const uint64_t seed = run_seed() + 17;
    std::mt19937_64 rng(seed + static_cast<uint64_t>(me.rank));
    const int64_t rows = 53 * c.ranks + 3;
    auto desc = matrix_desc(rows, 11, 12, 0, WHOLEMEMORY_DT_FLOAT);
    const auto total = static_cast<size_t>(wholememory_get_memory_size_from_tensor(&desc));
    ASSERT_EQ(static_cast<size_t>(rows) * 12 * sizeof(float), total);
    wholememory_handle_t handle = nullptr;
    OPS_ASSERT_OK(wholememory_malloc(&handle, total, comm, c.type, c.location, 12 * sizeof(float)));
    wholememory_tensor_t table = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_handle(&table, handle, &desc));
    const RootValue values = seeded_values(seed, WHOLEMEMORY_DT_FLOAT);
    fill_table(table, values, comm);
    check_gather(table, random_indices(rng, 200, rows, 9),
                 {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_INT, 2}, values, stream);

    // Rank r writes rows i with i % ranks == r from an input padded to 13, then all read back.
    std::vector<int64_t> mine;
    for (int64_t i = me.rank; i < rows; i += c.ranks) mine.push_back(i);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    scatter_rows(table, mine, {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_INT64, 2}, seed + 1, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    const RootValue now =
        after_scatter(table, every_row(rows), WHOLEMEMORY_DT_FLOAT, seed + 1, values);
    check_gather(table, every_row(rows), {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_INT64, 1}, now,
                 stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    OPS_EXPECT_OK(wholememory_free(handle));

    // The same table made by wholememory_create_tensor, with operands of exactly the size the
    // description functions give.
    OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, c.type, c.location));
    fill_table(table, values, comm);
    auto out_desc = matrix_desc(rows, 11, 13, 0, WHOLEMEMORY_DT_FLOAT);
    UserBuffer out(static_cast<size_t>(wholememory_get_memory_size_from_tensor(&out_desc)));
    wholememory_tensor_t output = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&output, out.data(), &out_desc));
    const std::vector<int64_t> all = every_row(rows);
    UserBuffer index_buffer(all.size() * sizeof(int64_t));
    index_buffer.upload(Bytes(reinterpret_cast<const uint8_t*>(all.data()),
                              reinterpret_cast<const uint8_t*>(all.data() + all.size())));
    auto index_desc = array_desc(rows, 0, WHOLEMEMORY_DT_INT64);
    wholememory_tensor_t indices = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&indices, index_buffer.data(), &index_desc));
    OPS_EXPECT_OK(wholememory_gather(table, indices, output, nullptr, stream));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
    const Bytes got = out.download();
    size_t mismatches = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < 11; ++col) {
        const Bytes expected = values(r, col);
        if (!std::equal(expected.begin(), expected.end(), got.begin() + (r * 13 + col) * 4))
          ++mismatches;
      }
    }
    EXPECT_EQ(0u, mismatches) << "of " << rows * 11 << " gathered elements";
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_scatter(output, indices, table, nullptr, stream));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    check_gather(table, every_row(rows), {WHOLEMEMORY_DT_FLOAT}, values, stream);
    OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
    OPS_EXPECT_OK(wholememory_destroy_tensor(indices));
    OPS_EXPECT_OK(wholememory_destroy_tensor(output));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

constexpr auto kDevice = WHOLEMEMORY_ML_DEVICE;
constexpr auto kHost = WHOLEMEMORY_ML_HOST;
INSTANTIATE_TEST_SUITE_P(Ops, PaddedTable,
                         ::testing::Values(Case{1, 1, WHOLEMEMORY_MT_CONTINUOUS, kDevice},
                                           Case{3, 1, WHOLEMEMORY_MT_CONTINUOUS, kHost},
                                           Case{2, 1, WHOLEMEMORY_MT_CONTINUOUS, kDevice},
                                           Case{2, 1, WHOLEMEMORY_MT_CHUNKED, kDevice},
                                           Case{3, 1, WHOLEMEMORY_MT_CHUNKED, kHost},
                                           Case{2, 1, WHOLEMEMORY_MT_DISTRIBUTED, kDevice},
                                           Case{4, 1, WHOLEMEMORY_MT_DISTRIBUTED, kHost},
                                           Case{4, 2, WHOLEMEMORY_MT_HIERARCHY, kDevice}),
                         table_case_name);

}  // namespace
}  // namespace memloom::opstest
