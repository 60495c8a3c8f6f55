// memloom.wholememory graph sampling (wholememory/wholegraph_op.h): the outputs the C call sizes
// come back as numpy arrays allocated through the env allocator's output functions.
#include <pybind11/numpy.h>

#include <cstring>

#include <memory>
#include <vector>

#include "blocking_call.h"
#include "wholememory/wholegraph_op.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

// One output of the call: the malloc callback sizes it from the description it is given.
struct OutputBuffer {
  std::vector<char> bytes;
  wholememory_tensor_description_t desc{};
  bool allocated = false;
};

void* output_malloc(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t,
                    void* memory_context, void*) {
  auto* buffer = static_cast<OutputBuffer*>(memory_context);
  buffer->desc = *desc;
  buffer->bytes.assign(wholememory_get_memory_element_count_from_tensor(desc) *
                               wholememory_dtype_get_element_size(desc->dtype) +
                           1,
                       0);
  buffer->allocated = true;
  return buffer->bytes.data();
}

void output_free(void* memory_context, void*) {
  auto* buffer = static_cast<OutputBuffer*>(memory_context);
  buffer->bytes.clear();
  buffer->allocated = false;
}

py::array to_numpy(const OutputBuffer& buffer) {
  const int64_t count = buffer.allocated ? buffer.desc.sizes[0] : 0;
  switch (buffer.desc.dtype) {
    case WHOLEMEMORY_DT_INT: {
      py::array_t<int32_t> out(count);
      std::memcpy(out.mutable_data(), buffer.bytes.data(), count * sizeof(int32_t));
      return out;
    }
    default: {
      py::array_t<int64_t> out(count);
      std::memcpy(out.mutable_data(), buffer.bytes.data(), count * sizeof(int64_t));
      return out;
    }
  }
}

// (sample offsets, sampled nodes, centre positions, edge ids); weights None: unweighted.
py::tuple sample(const Tensor& row_ptr, const Tensor& col_ptr, py::object weights,
                 py::handle centers, int max_sample_count, unsigned long long seed) {
  const ArrayRef center_ref = describe(centers, "center_nodes");
  BorrowedTensor center_tensor(center_ref, 1, "center_nodes");
  py::array_t<int32_t> offsets(static_cast<py::ssize_t>(center_ref.shape[0] + 1));
  BorrowedTensor offset_tensor(describe(offsets, "offsets"), 1, "offsets");
  wholememory_tensor_t weight_tensor = nullptr;
  if (!weights.is_none()) weight_tensor = weights.cast<const Tensor&>().get();
  OutputBuffer dest, center_local, edge_gid;
  wholememory_env_func_t env{};
  env.output_fns.malloc_fn = output_malloc;
  env.output_fns.free_fn = output_free;
  wholememory_tensor_t rows = row_ptr.get(), cols = col_ptr.get();
  const Outcome outcome = call_released([&] {
    if (weight_tensor == nullptr) {
      return outcome_of(wholegraph_csr_unweighted_sample_without_replacement(
          rows, cols, center_tensor.get(), max_sample_count, offset_tensor.get(), &dest,
          &center_local, &edge_gid, seed, &env, nullptr));
    }
    return outcome_of(wholegraph_csr_weighted_sample_without_replacement(
        rows, cols, weight_tensor, center_tensor.get(), max_sample_count, offset_tensor.get(),
        &dest, &center_local, &edge_gid, seed, &env, nullptr));
  });
  check(outcome, weight_tensor == nullptr ? "wholegraph_csr_unweighted_sample_without_replacement"
                                          : "wholegraph_csr_weighted_sample_without_replacement");
  return py::make_tuple(offsets, to_numpy(dest), to_numpy(center_local), to_numpy(edge_gid));
}

}  // namespace

void bind_wholegraph_sample(py::module_& m) {
  m.def("csr_sample_without_replacement", &sample, py::arg("csr_row_ptr"), py::arg("csr_col_ptr"),
        py::arg("csr_weight_ptr"), py::arg("center_nodes"), py::arg("max_sample_count"),
        py::arg("random_seed"),
        "(offsets, sampled nodes, centre positions, edge ids) of CSR sampling.");
}

}  // namespace memloom::python
