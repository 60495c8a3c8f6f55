// wholememory_env_test_op: row i of every output is dtype(i) + input, for float and integer types,
// into the fixed output and into variable outputs allocated through the caller's environment
// functions (device, pinned and host), and bad arguments are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

// An environment whose output malloc records what it was asked for and allocates on the host
// for pinned and host memory, through the defaults for device memory.
struct RecordingEnv {
  struct Request {
    wholememory_tensor_description_t desc;
    wholememory_memory_allocation_type_t type;
    void* context;
  };
  std::vector<Request> requests;
  std::vector<std::vector<char>> host_memory;
  wholememory_env_func_t env = *get_default_env_func();

  RecordingEnv() {
    env.output_fns.global_context = this;
    env.output_fns.malloc_fn = [](wholememory_tensor_description_t* desc,
                                  wholememory_memory_allocation_type_t type, void* context,
                                  void* global) -> void* {
      auto* self = static_cast<RecordingEnv*>(global);
      self->requests.push_back({*desc, type, context});
      if (type == WHOLEMEMORY_MA_DEVICE) {
        return get_default_env_func()->output_fns.malloc_fn(desc, type, context, nullptr);
      }
      self->host_memory.emplace_back(
          static_cast<size_t>(wholememory_get_memory_size_from_tensor(desc)));
      return self->host_memory.back().data();
    };
  }
};

template <typename T>
std::vector<T> download_as(const UserBuffer& buffer) {
  const Bytes bytes = buffer.download();
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

TEST(EnvTestOp, RowsAreTheRowNumberPlusTheInput) {
  run_in_one_rank([] {
    const int64_t columns = 5, rows = 7;
    // Floats: the device output goes through the recording environment.
    const std::vector<float> input = {0.5f, -1.0f, 2.25f, 100.0f, -7.5f};
    UserBuffer in(columns * sizeof(float)), out(rows * columns * sizeof(float));
    in.upload(Bytes(reinterpret_cast<const uint8_t*>(input.data()),
                    reinterpret_cast<const uint8_t*>(input.data() + columns)));
    auto in_desc = array_desc(columns, 0, WHOLEMEMORY_DT_FLOAT);
    auto out_desc = matrix_desc(rows, columns, columns, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_tensor_t in_tensor = nullptr, out_tensor = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&in_tensor, in.data(), &in_desc));
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&out_tensor, out.data(), &out_desc));
    RecordingEnv recording;
    void* device_context = nullptr;
    recording.env.temporary_fns.create_memory_context_fn(&device_context, nullptr);
    int pinned_context = 0, host_context = 0;
    OPS_ASSERT_OK(wholememory_env_test_op(in_tensor, out_tensor, device_context, &pinned_context,
                                          &host_context, rows, &recording.env, nullptr));
    const auto fixed = download_as<float>(out);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < columns; ++c) {
        EXPECT_EQ(static_cast<float>(i) + input[c], fixed[i * columns + c]) << i << "," << c;
      }
    }
    ASSERT_EQ(3u, recording.requests.size());
    EXPECT_EQ(WHOLEMEMORY_MA_DEVICE, recording.requests[0].type);
    EXPECT_EQ(device_context, recording.requests[0].context);
    EXPECT_EQ(WHOLEMEMORY_MA_PINNED, recording.requests[1].type);
    EXPECT_EQ(&pinned_context, recording.requests[1].context);
    EXPECT_EQ(WHOLEMEMORY_MA_HOST, recording.requests[2].type);
    EXPECT_EQ(&host_context, recording.requests[2].context);
    for (const auto& request : recording.requests) {
      EXPECT_EQ(2, request.desc.dim);
      EXPECT_EQ(rows, request.desc.sizes[0]);
      EXPECT_EQ(columns, request.desc.sizes[1]);
    }
    for (const auto& memory : recording.host_memory) {
      ASSERT_EQ(fixed.size() * sizeof(float), memory.size());
      EXPECT_EQ(0, std::memcmp(fixed.data(), memory.data(), memory.size()));
    }
    recording.env.output_fns.free_fn(device_context, nullptr);
    recording.env.temporary_fns.destroy_memory_context_fn(device_context, nullptr);
    OPS_EXPECT_OK(wholememory_destroy_tensor(in_tensor));
    OPS_EXPECT_OK(wholememory_destroy_tensor(out_tensor));

    // int8 wraps as the same sum in int8 does; no variable outputs, the default environment.
    const std::vector<int8_t> small = {120, -128, 3};
    UserBuffer in8(3), out8(10 * 3);
    in8.upload(Bytes(small.begin(), small.end()));
    auto in8_desc = array_desc(3, 0, WHOLEMEMORY_DT_INT8);
    auto out8_desc = matrix_desc(10, 3, 3, 0, WHOLEMEMORY_DT_INT8);
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&in_tensor, in8.data(), &in8_desc));
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&out_tensor, out8.data(), &out8_desc));
    OPS_ASSERT_OK(wholememory_env_test_op(in_tensor, out_tensor, nullptr, nullptr, nullptr, 10,
                                          nullptr, nullptr));
    const auto got8 = download_as<int8_t>(out8);
    for (int i = 0; i < 10; ++i) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(static_cast<int8_t>(i + small[c]), got8[i * 3 + c]) << i << "," << c;
      }
    }

    // Bad arguments: a row count that is not the output's, and a mismatched dtype.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_env_test_op(in_tensor, out_tensor, nullptr, nullptr, nullptr, 9, nullptr,
                                      nullptr));
    wholememory_tensor_t float_out = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&float_out, out.data(), &out_desc));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_env_test_op(in_tensor, float_out, nullptr, nullptr, nullptr, rows,
                                      nullptr, nullptr));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_env_test_op(nullptr, out_tensor, nullptr, nullptr, nullptr, 10, nullptr,
                                      nullptr));
    OPS_EXPECT_OK(wholememory_destroy_tensor(float_out));
    OPS_EXPECT_OK(wholememory_destroy_tensor(in_tensor));
    OPS_EXPECT_OK(wholememory_destroy_tensor(out_tensor));
  });
}

}  // namespace
}  // namespace memloom::opstest
