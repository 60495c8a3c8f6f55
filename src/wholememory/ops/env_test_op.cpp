// wholememory_env_test_op (wholememory/wholememory_op.h): the operation upstream's tests and
// bindings use to check a set of environment functions. Row i of its output is
// T(i) + input, computed in the input's dtype T; the result goes to the fixed-size output and to
// each variable output the caller asks for, which is allocated through p_env_fns->output_fns with
// the fixed output's description (device, pinned and host memory). The operation is tiny, so it
// computes on the host and moves the bytes with the stream's copy engine: it works on every
// backend and returns once the outputs hold the result.
#include <cstring>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/core/group.h"
#include "src/kernels/element_types.h"
#include "src/wholememory/ops/op_stream.h"
#include "src/wholememory/ops/temp_memory.h"
#include "src/wholememory/tensor/tensor.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholememory_op.h"

using memloom::raise;
using memloom::Status;
namespace wm = memloom::wholememory;
namespace kernels = memloom::kernels;

namespace {

// The storage of a tensor made from a pointer, at its storage offset.
char* data_of(const wm::Tensor& tensor, const char* name) {
  MEMLOOM_CHECK_ARG(!tensor.is_wholememory,
                    std::string(name) + " must not be a WholeMemory tensor");
  MEMLOOM_CHECK_ARG(tensor.storage != nullptr, std::string(name) + " has no memory");
  return static_cast<char*>(tensor.storage) +
         static_cast<size_t>(tensor.desc.storage_offset) *
             wholememory_dtype_get_element_size(tensor.desc.dtype);
}

// rows x columns elements of `dtype`, row i = dtype(i) + input. Sums are taken in double (floats)
// or int64 (integers) and stored back into dtype, as the same expression in dtype would round.
std::vector<char> env_test_rows(const std::vector<char>& input, int64_t rows, int64_t columns,
                                wholememory_dtype_t dtype) {
  const auto type = static_cast<kernels::DType>(dtype);
  const size_t element = wholememory_dtype_get_element_size(dtype);
  const bool floating = wholememory_dtype_is_floating_number(dtype);
  const auto wide = floating ? kernels::DType::kDouble : kernels::DType::kInt64;
  std::vector<char> input_wide(static_cast<size_t>(columns) * 8);
  kernels::convert_elements(type, wide, input.data(), input_wide.data(), columns);
  std::vector<char> out(static_cast<size_t>(rows * columns) * element);
  std::vector<char> row_wide(input_wide.size());
  for (int64_t i = 0; i < rows; ++i) {
    // dtype(i), widened again: the row number as the dtype holds it.
    char id[8], id_wide[8];
    const double id_double = static_cast<double>(i);
    kernels::convert_elements(floating ? kernels::DType::kDouble : kernels::DType::kInt64, type,
                              floating ? static_cast<const void*>(&id_double) : &i, id, 1);
    kernels::convert_elements(type, wide, id, id_wide, 1);
    for (int64_t c = 0; c < columns; ++c) {
      if (floating) {
        double a, b;
        std::memcpy(&a, id_wide, 8);
        std::memcpy(&b, input_wide.data() + c * 8, 8);
        const double sum = a + b;
        std::memcpy(row_wide.data() + c * 8, &sum, 8);
      } else {
        int64_t a, b;
        std::memcpy(&a, id_wide, 8);
        std::memcpy(&b, input_wide.data() + c * 8, 8);
        const auto sum = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
        std::memcpy(row_wide.data() + c * 8, &sum, 8);
      }
    }
    kernels::convert_elements(wide, type, row_wide.data(), out.data() + i * columns * element,
                              columns);
  }
  return out;
}

// Copies packed rows into storage whose rows are `stride` elements apart (padding untouched).
void copy_rows_out(memloom::hal::Stream& stream, char* destination, const std::vector<char>& rows,
                   int64_t count, int64_t columns, int64_t stride, size_t element) {
  const size_t row_bytes = static_cast<size_t>(columns) * element;
  if (stride == columns) {
    stream.copy(destination, rows.data(), rows.size());
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    stream.copy(destination + static_cast<size_t>(i * stride) * element,
                rows.data() + static_cast<size_t>(i) * row_bytes, row_bytes);
  }
}

}  // namespace

extern "C" wholememory_error_code_t wholememory_env_test_op(
    wholememory_tensor_t input_tensor, wholememory_tensor_t output_fixed_tensor,
    void* output_variable_device_tensor_handle, void* output_variable_pinned_tensor_handle,
    void* output_variable_host_tensor_handle, int64_t output_variable_entry_count,
    wholememory_env_func_t* p_env_fns, void* stream) {
  return wm::guarded("wholememory_env_test_op", [&] {
    auto& registry = wm::TensorRegistry::instance();
    const wm::Tensor input = registry.get(input_tensor);
    const wm::Tensor output = registry.get(output_fixed_tensor);
    const auto& in = input.desc;
    const auto& out = output.desc;
    MEMLOOM_CHECK_ARG(in.dim == 1, "input_tensor must be 1-D, got dim " + std::to_string(in.dim));
    MEMLOOM_CHECK_ARG(in.strides[0] == 1, "input_tensor's stride must be 1");
    MEMLOOM_CHECK_ARG(out.dim == 2,
                      "output_fixed_tensor must be 2-D, got dim " + std::to_string(out.dim));
    MEMLOOM_CHECK_ARG(out.sizes[0] == output_variable_entry_count,
                      "output_fixed_tensor has " + std::to_string(out.sizes[0]) +
                          " rows, output_variable_entry_count is " +
                          std::to_string(output_variable_entry_count));
    MEMLOOM_CHECK_ARG(out.sizes[1] == in.sizes[0],
                      "output_fixed_tensor has " + std::to_string(out.sizes[1]) +
                          " columns, input_tensor " + std::to_string(in.sizes[0]) + " elements");
    MEMLOOM_CHECK_ARG(in.dtype == out.dtype,
                      "input_tensor and output_fixed_tensor differ in dtype");
    const wm::MatrixShape shape = wm::matrix_shape(out, "output_fixed_tensor");
    const size_t element = shape.element_bytes();
    char* input_data = data_of(input, "input_tensor");
    char* output_data = data_of(output, "output_fixed_tensor");
    wholememory_env_func_t* env = wm::checked_env(p_env_fns);
    const bool variable = output_variable_device_tensor_handle != nullptr ||
                          output_variable_pinned_tensor_handle != nullptr ||
                          output_variable_host_tensor_handle != nullptr;
    MEMLOOM_CHECK_ARG(!variable || env->output_fns.malloc_fn != nullptr,
                      "p_env_fns->output_fns has no malloc_fn for the variable outputs");

    auto op_stream = wm::StreamRegistry::instance().resolve(stream);
    const auto deadline = memloom::Deadline::after(memloom::core::default_collective_timeout());
    std::vector<char> host_input(static_cast<size_t>(in.sizes[0]) * element);
    if (!host_input.empty())
      op_stream->stream().copy(host_input.data(), input_data, host_input.size());
    op_stream->synchronize(deadline);
    const std::vector<char> rows =
        env_test_rows(host_input, shape.rows, shape.columns, shape.dtype);

    auto deliver = [&](char* destination) {
      if (!rows.empty()) {
        copy_rows_out(op_stream->stream(), destination, rows, shape.rows, shape.columns,
                      shape.stride, element);
      }
    };
    deliver(output_data);
    const std::pair<void*, wholememory_memory_allocation_type_t> outputs[] = {
        {output_variable_device_tensor_handle, WHOLEMEMORY_MA_DEVICE},
        {output_variable_pinned_tensor_handle, WHOLEMEMORY_MA_PINNED},
        {output_variable_host_tensor_handle, WHOLEMEMORY_MA_HOST}};
    for (const auto& [context, type] : outputs) {
      if (context == nullptr) continue;
      wholememory_tensor_description_t desc = out;
      desc.storage_offset = 0;
      void* memory =
          env->output_fns.malloc_fn(&desc, type, context, env->output_fns.global_context);
      if (memory == nullptr) {
        raise(Status::kOutOfMemory, "the environment's output malloc returned no memory (type " +
                                        std::to_string(static_cast<int>(type)) + ")");
      }
      deliver(static_cast<char*>(memory));
    }
    op_stream->synchronize(deadline);
  });
}
