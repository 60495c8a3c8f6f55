#include "tests/embedding/embedding_test_support.h"

#include <cmath>
#include <cstring>

#include "src/kernels/element_types.h"

namespace memloom::embtest {

DeviceTensor::DeviceTensor(const void* data, size_t bytes, wholememory_dtype_t dtype, int64_t rows,
                           int64_t columns)
    : buffer_(bytes == 0 ? 8 : bytes) {
  opstest::Bytes host(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  host.resize(bytes == 0 ? 8 : bytes);
  buffer_.upload(host);
  auto desc = columns == 0 ? opstest::array_desc(rows, 0, dtype)
                           : opstest::matrix_desc(rows, columns, columns, 0, dtype);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_make_tensor_from_pointer(&tensor_, buffer_.data(), &desc));
}

DeviceTensor::~DeviceTensor() {
  if (tensor_ != nullptr) {
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(tensor_));
  }
}

std::vector<float> gather_floats(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                                 int64_t columns) {
  DeviceTensor list(indices, WHOLEMEMORY_DT_INT64);
  std::vector<float> zeros(indices.size() * static_cast<size_t>(columns), 0.0F);
  DeviceTensor out(zeros, WHOLEMEMORY_DT_FLOAT, columns);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_gather(table, list.tensor(), out.tensor(), nullptr, nullptr, -1));
  EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(nullptr));
  return out.download<float>();
}

std::vector<float> embedding_gather_floats(wholememory_embedding_t embedding,
                                           const std::vector<int64_t>& indices, int64_t columns) {
  DeviceTensor list(indices, WHOLEMEMORY_DT_INT64);
  std::vector<float> zeros(indices.size() * static_cast<size_t>(columns), 0.0F);
  DeviceTensor out(zeros, WHOLEMEMORY_DT_FLOAT, columns);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_embedding_gather(embedding, list.tensor(), out.tensor(), true, nullptr, 0));
  EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(nullptr));
  return out.download<float>();
}

void scatter_floats(wholememory_tensor_t table, const std::vector<float>& values, int64_t columns,
                    int rank, int world, wholememory_comm_t comm) {
  const int64_t rows = static_cast<int64_t>(values.size()) / columns;
  std::vector<int64_t> mine;
  std::vector<float> rows_of_mine;
  for (int64_t row = rank; row < rows; row += world) {
    mine.push_back(row);
    rows_of_mine.insert(rows_of_mine.end(), values.begin() + row * columns,
                        values.begin() + (row + 1) * columns);
  }
  DeviceTensor list(mine, WHOLEMEMORY_DT_INT64);
  DeviceTensor input(rows_of_mine, WHOLEMEMORY_DT_FLOAT, columns);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_scatter(input.tensor(), list.tensor(), table, nullptr, nullptr, -1));
  EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(nullptr));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_communicator_barrier(comm));
}

float rounded(float value, wholememory_dtype_t dtype) {
  switch (dtype) {
    case WHOLEMEMORY_DT_HALF:
      return kernels::half_to_float(kernels::float_to_half(value));
    case WHOLEMEMORY_DT_BF16:
      return kernels::bf16_to_float(kernels::float_to_bf16(value));
    default:
      return value;
  }
}

DenseReference::DenseReference(wholememory_optimizer_type_t type,
                               std::map<std::string, float> parameters, std::vector<float> initial,
                               int64_t dim, wholememory_dtype_t dtype)
    : type(type),
      parameters(std::move(parameters)),
      rows(static_cast<int64_t>(initial.size()) / dim),
      dim(dim),
      dtype(dtype),
      weight(std::move(initial)),
      m(weight.size(), 0.0F),
      v(weight.size(), 0.0F),
      beta(static_cast<size_t>(rows) * 2, 1.0F) {
  for (float& w : weight) w = rounded(w, dtype);
}

void DenseReference::step(const std::vector<std::vector<int64_t>>& indices,
                          const std::vector<std::vector<float>>& grads, float lr) {
  std::map<int64_t, std::vector<float>> summed;
  for (size_t r = 0; r < indices.size(); ++r) {
    for (size_t i = 0; i < indices[r].size(); ++i) {
      const int64_t row = indices[r][i];
      if (row < 0) continue;
      auto& sum =
          summed.try_emplace(row, std::vector<float>(static_cast<size_t>(dim), 0.0F)).first->second;
      for (int64_t c = 0; c < dim; ++c) sum[c] += grads[r][i * dim + c];
    }
  }
  const float wd = parameters["weight_decay"];
  for (auto& [row, sum] : summed) {
    const float beta1t = beta[2 * row] * parameters["beta1"];
    const float beta2t = beta[2 * row + 1] * parameters["beta2"];
    for (int64_t c = 0; c < dim; ++c) {
      const size_t at = static_cast<size_t>(row * dim + c);
      float w = weight[at];
      float g = sum[c];
      switch (type) {
        case WHOLEMEMORY_OPT_SGD:
          g += wd * w;
          w -= lr * g;
          break;
        case WHOLEMEMORY_OPT_LAZY_ADAM: {
          const float b1 = parameters["beta1"], b2 = parameters["beta2"];
          if (parameters["adam_w"] > 0.5F) {
            w -= lr * wd * w;
          } else {
            g += wd * w;
          }
          m[at] = b1 * m[at] + (1 - b1) * g;
          v[at] = b2 * v[at] + (1 - b2) * g * g;
          const float m_hat = m[at] / (1 - beta1t);
          const float v_hat = v[at] / (1 - beta2t);
          w -= lr * m_hat / (std::sqrt(v_hat) + parameters["epsilon"]);
          break;
        }
        case WHOLEMEMORY_OPT_RMSPROP: {
          g += wd * w;
          const float alpha = parameters["alpha"];
          v[at] = alpha * v[at] + (1 - alpha) * g * g;
          w -= lr * g / (std::sqrt(v[at]) + parameters["epsilon"]);
          break;
        }
        default:
          g += wd * w;
          v[at] = v[at] + g * g;
          w -= lr * g / (std::sqrt(v[at]) + parameters["epsilon"]);
      }
      weight[at] = rounded(w, dtype);
    }
    if (type == WHOLEMEMORY_OPT_LAZY_ADAM) {
      beta[2 * row] = beta1t;
      beta[2 * row + 1] = beta2t;
    }
  }
}

void expect_near_all(const std::vector<float>& expected, const std::vector<float>& actual,
                     float tolerance, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    const float slack = tolerance * std::max(1.0F, std::fabs(expected[i]));
    if (!(std::fabs(expected[i] - actual[i]) <= slack)) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected "
                    << expected[i];
      return;
    }
  }
}

}  // namespace memloom::embtest
