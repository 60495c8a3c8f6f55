// Helpers of the gather/scatter tests: values that depend only on (seed, entry, column), user
// buffers in device memory (so the same tests run on GPUs), tensors over them, and checks of a
// gather or scatter against a reference computed on the host.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "memloom/stream.h"
#include "tests/wholememory/wm_test_support.h"
#include "wholememory/wholememory_op.h"
#include "wholememory/wholememory_tensor.h"

namespace memloom::opstest {

using Bytes = std::vector<uint8_t>;

// One case of the tests parameterised over tables: ranks over emulated nodes, memory type and
// location.
struct TableCase {
  int ranks;
  int nodes;
  wholememory_memory_type_t type;
  wholememory_memory_location_t location;
};
// The case's name in test listings, e.g. "ChunkedDevice4Ranks1Nodes".
std::string table_case_name(const ::testing::TestParamInfo<TableCase>& info);

// Runs `body` in one forked rank without a store (the backend then starts in the child, as in
// the other tests of this binary) and expects it to pass.
void run_in_one_rank(const std::function<void()>& body);

// A fresh seed per test run (printed, so a failure can be replayed with MEMLOOM_TEST_SEED).
uint64_t run_seed();

// The element of dtype at (entry, column) of data set `seed`: random bits, finite for floats.
Bytes element_value(uint64_t seed, int64_t entry, int64_t column, wholememory_dtype_t dtype);
// `element` (of type `from`) converted to `to` as the API defines it.
Bytes converted(const Bytes& element, wholememory_dtype_t from, wholememory_dtype_t to);

// Device memory (the default environment's output allocator) for operands of an operation.
class UserBuffer {
 public:
  explicit UserBuffer(size_t bytes);
  ~UserBuffer();
  UserBuffer(const UserBuffer&) = delete;
  UserBuffer& operator=(const UserBuffer&) = delete;
  void* data() const { return data_; }
  void upload(const Bytes& bytes);
  Bytes download() const;

 private:
  void* context_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_;
};

wholememory_tensor_description_t matrix_desc(int64_t rows, int64_t columns, int64_t stride,
                                             int64_t offset, wholememory_dtype_t dtype);
wholememory_tensor_description_t array_desc(int64_t size, int64_t offset,
                                            wholememory_dtype_t dtype);

// The value of element (row, column) of the root tensor, in the table's dtype.
using RootValue = std::function<Bytes(int64_t row, int64_t column)>;
RootValue seeded_values(uint64_t seed, wholememory_dtype_t dtype);

// Every rank writes the entries it holds (padding included) with `values`; then a barrier.
void fill_table(wholememory_tensor_t root, const RootValue& values, wholememory_comm_t comm);

// Random row indices of a table of `rows` rows: duplicates, and about one in `negative_every`
// negative (0: none).
std::vector<int64_t> random_indices(std::mt19937_64& rng, size_t count, int64_t rows,
                                    int negative_every);
// Every row of a table of `rows` rows, in order: 0, 1, ..., rows - 1.
std::vector<int64_t> every_row(int64_t rows);

struct OutputLayout {
  wholememory_dtype_t dtype;
  wholememory_dtype_t index_dtype = WHOLEMEMORY_DT_INT64;
  int64_t padding = 0;  // extra elements per output row (2-D)
  int64_t offset = 0;   // storage offset of the output, in elements
};

// Gathers `indices` from `table` (a root or sub-tensor whose root holds `values`) and checks every
// output element, untouched skipped rows and padding included.
void check_gather(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                  const OutputLayout& layout, const RootValue& values, memloom_stream_t stream);

// The value scatter tests write for (row index, column) of a table: depends on nothing else, so
// duplicate indices and other ranks' writes of the same row agree.
Bytes scatter_value(uint64_t seed, int64_t row, int64_t column, wholememory_dtype_t dtype);

// Scatters rows scatter_value(seed, index, column) (of the input layout's dtype) to `indices`.
void scatter_rows(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                  const OutputLayout& input, uint64_t seed, memloom_stream_t stream);

// The root's values after rows `written` of `table` (a root or sub-tensor) received scatter_value
// rows of dtype `input` converted to the table's dtype.
RootValue after_scatter(wholememory_tensor_t table, const std::vector<int64_t>& written,
                        wholememory_dtype_t input, uint64_t seed, const RootValue& before);

}  // namespace memloom::opstest

#define OPS_ASSERT_OK(expr) ASSERT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
#define OPS_EXPECT_OK(expr) EXPECT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
