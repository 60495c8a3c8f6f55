// Helpers of the embedding and graph tests: device-readable operands built from host vectors,
// gathers back to the host, and a dense reference of the sparse optimizers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"
#include "wholememory/embedding.h"

namespace memloom::embtest {

using opstest::UserBuffer;

// A tensor made from a pointer over device memory holding `values` (1-D, or rows x columns).
class DeviceTensor {
 public:
  template <typename T>
  DeviceTensor(const std::vector<T>& values, wholememory_dtype_t dtype, int64_t columns = 0)
      : DeviceTensor(values.data(), values.size() * sizeof(T), dtype,
                     columns == 0 ? static_cast<int64_t>(values.size())
                                  : static_cast<int64_t>(values.size()) / columns,
                     columns) {}
  DeviceTensor(const void* data, size_t bytes, wholememory_dtype_t dtype, int64_t rows,
               int64_t columns);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  wholememory_tensor_t tensor() const { return tensor_; }
  void* data() const { return buffer_.data(); }
  template <typename T>
  std::vector<T> download() const {
    const auto bytes = buffer_.download();
    std::vector<T> values(bytes.size() / sizeof(T));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
  }

 private:
  UserBuffer buffer_;
  wholememory_tensor_t tensor_ = nullptr;
};

// Rows `indices` of a 2-D table as FLOAT (wholememory_gather, or the embedding's gather).
std::vector<float> gather_floats(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                                 int64_t columns);
std::vector<float> embedding_gather_floats(wholememory_embedding_t embedding,
                                           const std::vector<int64_t>& indices, int64_t columns);

// Every rank scatters its share (rows r, r + world, ...) of `values` (rows x columns, FLOAT) into
// the table; collective, with a barrier after.
void scatter_floats(wholememory_tensor_t table, const std::vector<float>& values, int64_t columns,
                    int rank, int world, wholememory_comm_t comm);

// `value` stored as `dtype` and read back (what a table of that dtype holds).
float rounded(float value, wholememory_dtype_t dtype);

// The same updates as wholememory_embedding_gather_gradient_apply, densely: every row's gradients
// summed in rank order then list order, one step per distinct row.
struct DenseReference {
  wholememory_optimizer_type_t type;
  std::map<std::string, float> parameters;
  int64_t rows, dim;
  wholememory_dtype_t dtype;
  std::vector<float> weight, m, v, beta;

  DenseReference(wholememory_optimizer_type_t type, std::map<std::string, float> parameters,
                 std::vector<float> initial, int64_t dim, wholememory_dtype_t dtype);
  void step(const std::vector<std::vector<int64_t>>& indices,
            const std::vector<std::vector<float>>& grads, float lr);
};

// The values relative error `tolerance` apart (plus a tiny absolute slack); reports the first
// mismatch.
void expect_near_all(const std::vector<float>& expected, const std::vector<float>& actual,
                     float tolerance, const std::string& what);

}  // namespace memloom::embtest

#define EMB_ASSERT_OK(expr) ASSERT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
#define EMB_EXPECT_OK(expr) EXPECT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
