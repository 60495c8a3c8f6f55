// memloom.wholememory graph sampling (wholememory/wholegraph_op.h). The outputs only the C call
// can size are allocated by a Python callable the caller passes, allocate(count, dtype), which
// returns an array (a torch tensor on the graph's compute device, say) that the call writes in
// place: the sampling kernel runs on the backend's device, so its outputs must be memory that
// device writes (CUDA device memory on the cuda backend), not host memory of the binding.
#include <pybind11/pybind11.h>

#include <exception>
#include <string>
#include <utility>

#include "blocking_call.h"
#include "wholememory/env_func_ptrs.h"
#include "wholememory/wholegraph_op.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

// One output of the call. The C call runs with the GIL released (call_released), so the
// callbacks take it back to run the allocator; a Python error cannot cross the C call, so it is
// kept here and raised once the call has returned.
struct OutputContext {
  explicit OutputContext(py::object allocator) : allocate(std::move(allocator)) {}
  py::object allocate;
  py::object array = py::none();  // what allocate returned: the output, alive after the call
  std::exception_ptr error;
};

void* output_malloc(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t,
                    void* memory_context, void*) {
  auto* output = static_cast<OutputContext*>(memory_context);
  py::gil_scoped_acquire gil;
  try {
    const int64_t count = wholememory_get_memory_element_count_from_tensor(desc);
    py::object array = output->allocate(count, desc->dtype);
    const ArrayRef ref = describe(array, "the array allocate() returned");
    const size_t needed =
        static_cast<size_t>(count) * wholememory_dtype_get_element_size(desc->dtype);
    if (ref.dtype != desc->dtype || ref.bytes < needed || !ref.contiguous || !ref.writable) {
      throw py::value_error("allocate(" + std::to_string(count) +
                            ", ...) must return a writable contiguous array of that many "
                            "elements of the dtype it was given");
    }
    output->array = std::move(array);
    return ref.data;
  } catch (...) {
    output->error = std::current_exception();
    return nullptr;
  }
}

void output_free(void* memory_context, void*) {
  auto* output = static_cast<OutputContext*>(memory_context);
  py::gil_scoped_acquire gil;
  output->array = py::none();
}

// (sampled nodes, centre positions or None, edge ids or None); offsets (INT, centres + 1) is
// written in place; weights None: unweighted.
py::tuple sample(const PyTensor& row_ptr, const PyTensor& col_ptr, py::object weights,
                 py::handle centers, int max_sample_count, unsigned long long seed,
                 py::handle offsets, py::object allocate, bool need_center_local_output,
                 bool need_edge_output) {
  const ArrayRef center_ref = describe(centers, "center_nodes");
  BorrowedTensor center_tensor(center_ref, 1, "center_nodes");
  BorrowedTensor offset_tensor(describe(offsets, "output_sample_offset"), 1,
                               "output_sample_offset");
  if (!PyCallable_Check(allocate.ptr())) throw py::type_error("allocate must be callable");
  wholememory_tensor_t weight_tensor = nullptr;
  if (!weights.is_none()) weight_tensor = weights.cast<const PyTensor&>().get();
  OutputContext dest(allocate), center_local(allocate), edge_gid(allocate);
  wholememory_env_func_t env{};
  env.temporary_fns = get_default_env_func()->temporary_fns;
  env.output_fns.malloc_fn = output_malloc;
  env.output_fns.free_fn = output_free;
  void* center_context = need_center_local_output ? &center_local : nullptr;
  void* edge_context = need_edge_output ? &edge_gid : nullptr;
  wholememory_tensor_t rows = row_ptr.get(), cols = col_ptr.get();
  const Outcome outcome = call_released([&] {
    if (weight_tensor == nullptr) {
      return outcome_of(wholegraph_csr_unweighted_sample_without_replacement(
          rows, cols, center_tensor.get(), max_sample_count, offset_tensor.get(), &dest,
          center_context, edge_context, seed, &env, nullptr));
    }
    return outcome_of(wholegraph_csr_weighted_sample_without_replacement(
        rows, cols, weight_tensor, center_tensor.get(), max_sample_count, offset_tensor.get(),
        &dest, center_context, edge_context, seed, &env, nullptr));
  });
  for (const OutputContext* output : {&dest, &center_local, &edge_gid}) {
    if (output->error) std::rethrow_exception(output->error);
  }
  check(outcome, weight_tensor == nullptr ? "wholegraph_csr_unweighted_sample_without_replacement"
                                          : "wholegraph_csr_weighted_sample_without_replacement");
  return py::make_tuple(dest.array, center_local.array, edge_gid.array);
}

}  // namespace

void bind_wholegraph_sample(py::module_& m) {
  m.def("csr_sample_without_replacement", &sample, py::arg("csr_row_ptr"), py::arg("csr_col_ptr"),
        py::arg("csr_weight_ptr"), py::arg("center_nodes"), py::arg("max_sample_count"),
        py::arg("random_seed"), py::arg("output_sample_offset"), py::arg("allocate"),
        py::arg("need_center_local_output") = true, py::arg("need_edge_output") = true,
        "CSR sampling: fills output_sample_offset and returns (sampled nodes, centre positions "
        "or None, edge ids or None), each an array from allocate(count, dtype).");
}

}  // namespace memloom::python
