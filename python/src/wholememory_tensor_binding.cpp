// memloom.wholememory: tensors, their zero-copy views, gather/scatter and file I/O.
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "array_ref.h"
#include "blocking_call.h"
#include "memloom/stream.h"
#include "wholememory/wholememory_op.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

struct TensorView : View {
  TensorView(void* data, wholememory_dtype_t dtype, std::vector<int64_t> shape,
             std::vector<int64_t> strides, py::object owner, std::shared_ptr<int> token)
      : View(data, dtype, std::move(shape), std::move(strides), std::move(owner)),
        token_(std::move(token)) {}
  std::shared_ptr<int> token_;
};

const wholememory_tensor_description_t& description_of(const Tensor& tensor) {
  auto* desc = wholememory_tensor_get_tensor_description(tensor.get());
  if (desc == nullptr) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "the tensor has no description");
  }
  return *desc;
}

wholememory_handle_t memory_of(const Tensor& tensor) {
  wholememory_handle_t handle = wholememory_tensor_get_memory_handle(tensor.get());
  if (handle == nullptr) {
    raise_wholememory_error(WHOLEMEMORY_NOT_SUPPORTED, "the tensor has no WholeMemory handle");
  }
  return handle;
}

int world_size_of(const Tensor& tensor) {
  wholememory_comm_t comm = nullptr;
  check(wholememory_get_communicator(&comm, memory_of(tensor)), "wholememory_get_communicator");
  int size = 0;
  check(wholememory_communicator_get_size(&size, comm), "wholememory_communicator_get_size");
  return size;
}

py::object view_of(py::object self, const PyTensor& tensor, void* data,
                   const wholememory_tensor_description_t& desc, int64_t rows) {
  std::vector<int64_t> shape(desc.sizes, desc.sizes + desc.dim);
  std::vector<int64_t> strides(desc.strides, desc.strides + desc.dim);
  if (rows >= 0) shape[0] = rows;
  return py::cast(TensorView(data, desc.dtype, std::move(shape), std::move(strides),
                             std::move(self), tensor.views));
}

py::object local_view(py::object self) {
  const auto& tensor = self.cast<const PyTensor&>();
  wholememory_tensor_t local = nullptr;
  check(wholememory_tensor_map_local_tensor(tensor.get(), &local),
        "wholememory_tensor_map_local_tensor");
  void* data = wholememory_tensor_get_data_pointer(local);
  const wholememory_tensor_description_t desc = *wholememory_tensor_get_tensor_description(local);
  check(wholememory_destroy_tensor(local), "wholememory_destroy_tensor (local view)");
  return view_of(std::move(self), tensor, data, desc, -1);
}

py::object global_view(py::object self) {
  const auto& tensor = self.cast<const PyTensor&>();
  const auto& desc = description_of(tensor);
  void* base = nullptr;
  check(wholememory_get_global_pointer(&base, memory_of(tensor)),
        "wholememory_get_global_pointer (a global view needs CONTINUOUS memory, or HIERARCHY on "
        "one node)");
  const size_t element = wholememory_dtype_get_element_size(desc.dtype);
  return view_of(std::move(self), tensor, static_cast<char*>(base) + desc.storage_offset * element,
                 desc, -1);
}

// Every rank's partition as mapped here (CHUNKED and CONTINUOUS), with its first entry's index.
py::tuple rank_views(py::object self) {
  const auto& tensor = self.cast<const PyTensor&>();
  const auto& desc = description_of(tensor);
  if (desc.storage_offset != 0) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT,
                            "rank views need the whole tensor, not a sub-tensor");
  }
  const int world = world_size_of(tensor);
  std::vector<size_t> offsets(world + 1);
  check(wholememory_tensor_get_entry_offsets(offsets.data(), tensor.get()),
        "wholememory_tensor_get_entry_offsets");
  py::list views, starts;
  for (int rank = 0; rank < world; ++rank) {
    void* data = nullptr;
    size_t size = 0, offset = 0;
    check(wholememory_get_rank_memory(&data, &size, &offset, rank, memory_of(tensor)),
          "wholememory_get_rank_memory (rank views need CHUNKED or CONTINUOUS memory)");
    views.append(
        view_of(self, tensor, data, desc, static_cast<int64_t>(offsets[rank + 1] - offsets[rank])));
    starts.append(offsets[rank]);
  }
  return py::make_tuple(views, starts);
}

int rows_dims(const Tensor& table) {
  return description_of(table).dim;
}

// Tables of several ranks may wait on their peers: those calls are interruptible (Ctrl-C).
bool spans_ranks(const PyTensor& table) {
  return world_size_of(table) > 1;
}

// The call, then a wait for its stream (the default one).
Outcome synchronized(wholememory_error_code_t code) {
  Outcome result = outcome_of(code);
  if (result.code == WHOLEMEMORY_SUCCESS && memloom_stream_synchronize(nullptr) != 0) {
    result = Outcome{WHOLEMEMORY_LOGIC_ERROR, take_failure_message()};
  }
  return result;
}

void gather(const PyTensor& table, py::handle indices, py::handle output) {
  const ArrayRef index_ref = describe(indices, "indices");
  ArrayRef output_ref = describe(output, "output");
  if (!output_ref.writable) throw py::value_error("output is read-only");
  auto index_tensor = std::make_shared<BorrowedTensor>(index_ref, 1, "indices");
  auto output_tensor = std::make_shared<BorrowedTensor>(output_ref, rows_dims(table), "output");
  wholememory_tensor_t handle = table.get();
  const Outcome outcome = call_data_path<Outcome>(
      spans_ranks(table),
      {py::reinterpret_borrow<py::object>(indices), py::reinterpret_borrow<py::object>(output)},
      [handle, index_tensor, output_tensor] {
        return synchronized(wholememory_gather(handle, index_tensor->get(), output_tensor->get(),
                                               nullptr, nullptr));
      });
  check(outcome, "wholememory_gather");
}

void scatter(const PyTensor& table, py::handle input, py::handle indices) {
  const ArrayRef input_ref = describe(input, "input");
  const ArrayRef index_ref = describe(indices, "indices");
  auto input_tensor = std::make_shared<BorrowedTensor>(input_ref, rows_dims(table), "input");
  auto index_tensor = std::make_shared<BorrowedTensor>(index_ref, 1, "indices");
  wholememory_tensor_t handle = table.get();
  const Outcome outcome = call_data_path<Outcome>(
      spans_ranks(table),
      {py::reinterpret_borrow<py::object>(input), py::reinterpret_borrow<py::object>(indices)},
      [handle, input_tensor, index_tensor] {
        return synchronized(wholememory_scatter(input_tensor->get(), index_tensor->get(), handle,
                                                nullptr, nullptr));
      });
  check(outcome, "wholememory_scatter");
}

struct RowLayout {
  size_t memory_offset, entry_stride, entry_bytes;
};

RowLayout row_layout(const Tensor& tensor) {
  const auto& desc = description_of(tensor);
  const size_t element = wholememory_dtype_get_element_size(desc.dtype);
  const size_t columns = desc.dim == 2 ? static_cast<size_t>(desc.sizes[1]) : 1;
  const size_t stride = desc.dim == 2 ? static_cast<size_t>(desc.strides[0]) : 1;
  return {static_cast<size_t>(desc.storage_offset) * element, stride * element, columns * element};
}

void load_from_file(const PyTensor& tensor, std::vector<std::string> files, int round_robin) {
  if (files.empty()) throw py::value_error("the file list is empty");
  wholememory_handle_t handle = memory_of(tensor);
  const RowLayout layout = row_layout(tensor);
  check(call_interruptibly<Outcome>([handle, layout, files = std::move(files), round_robin] {
          std::vector<const char*> names;
          for (const auto& file : files) names.push_back(file.c_str());
          return outcome_of(wholememory_load_from_file(
              handle, layout.memory_offset, layout.entry_stride, layout.entry_bytes, names.data(),
              static_cast<int>(names.size()), round_robin));
        }),
        "wholememory_load_from_file");
}

void store_to_file(const PyTensor& tensor, std::string file) {
  wholememory_handle_t handle = memory_of(tensor);
  const RowLayout layout = row_layout(tensor);
  check(call_interruptibly<Outcome>([handle, layout, file = std::move(file)] {
          return outcome_of(wholememory_store_to_file(
              handle, layout.memory_offset, layout.entry_stride, layout.entry_bytes, file.c_str()));
        }),
        "wholememory_store_to_file");
}

PyTensor create_tensor(const Comm& comm, std::vector<int64_t> shape, wholememory_dtype_t dtype,
                       wholememory_memory_type_t type, wholememory_memory_location_t location,
                       std::optional<std::vector<int64_t>> strides,
                       std::optional<std::vector<size_t>> partition) {
  if (shape.empty() || shape.size() > 2) throw py::value_error("shape must be 1-D or 2-D");
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = static_cast<int>(shape.size());
  desc.dtype = dtype;
  for (size_t i = 0; i < shape.size(); ++i) desc.sizes[i] = shape[i];
  if (strides) {
    if (strides->size() != shape.size()) throw py::value_error("strides must match shape");
    for (size_t i = 0; i < shape.size(); ++i) desc.strides[i] = (*strides)[i];
  } else {
    desc.strides[desc.dim - 1] = 1;
    if (desc.dim == 2) desc.strides[0] = shape[1];
  }
  wholememory_comm_t handle = comm.get();
  auto made = call_interruptibly<std::pair<Outcome, wholememory_tensor_t>>(
      [desc, handle, type, location, partition]() mutable {
        wholememory_tensor_t tensor = nullptr;
        std::vector<size_t> plan = partition.value_or(std::vector<size_t>());
        Outcome outcome = outcome_of(wholememory_create_tensor(
            &tensor, &desc, handle, type, location, plan.empty() ? nullptr : plan.data()));
        return std::make_pair(outcome, tensor);
      });
  check(made.first, "wholememory_create_tensor");
  PyTensor tensor;
  tensor.handle = made.second;
  tensor.owned = true;
  return tensor;
}

void destroy_tensor(PyTensor& tensor, bool force) {
  wholememory_tensor_t handle = tensor.get();
  const long views = tensor.views.use_count() - 1;
  if (views > 0 && !force) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT,
                            std::to_string(views) +
                                " view(s) of this tensor (or arrays made from them) are alive; "
                                "drop them before destroy(), or pass force=True");
  }
  check(call_interruptibly<Outcome>(
            [handle] { return outcome_of(wholememory_destroy_tensor(handle)); }),
        "wholememory_destroy_tensor");
  tensor.handle = nullptr;
}

std::vector<size_t> entry_offsets(const PyTensor& tensor) {
  std::vector<size_t> offsets(world_size_of(tensor) + 1);
  check(wholememory_tensor_get_entry_offsets(offsets.data(), tensor.get()),
        "wholememory_tensor_get_entry_offsets");
  return offsets;
}

size_t tensor_size_value(const PyTensor& tensor,
                         wholememory_error_code_t (*get)(size_t*, wholememory_tensor_t),
                         const char* what) {
  size_t value = 0;
  check(get(&value, tensor.get()), what);
  return value;
}

PyTensor sub_tensor(const PyTensor& tensor, std::vector<int64_t> starts,
                    std::vector<int64_t> ends) {
  const auto& desc = description_of(tensor);
  if (static_cast<int>(starts.size()) != desc.dim || static_cast<int>(ends.size()) != desc.dim) {
    throw py::value_error("starts and ends need one value per dimension");
  }
  PyTensor sub;
  check(wholememory_tensor_get_subtensor(tensor.get(), starts.data(), ends.data(), &sub.handle),
        "wholememory_tensor_get_subtensor");
  return sub;
}

// The benchmark's reference: the gather() above minus Python, `repeats` times in a C++ loop over
// tensors wrapped once; returns seconds per call.
double time_c_gather(const PyTensor& table, py::handle indices, py::handle output, int repeats) {
  BorrowedTensor index_tensor(describe(indices, "indices"), 1, "indices");
  BorrowedTensor output_tensor(describe(output, "output"), rows_dims(table), "output");
  wholememory_tensor_t handle = table.get();
  return call_released([&] {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) {
      if (wholememory_gather(handle, index_tensor.get(), output_tensor.get(), nullptr, nullptr) !=
              WHOLEMEMORY_SUCCESS ||
          memloom_stream_synchronize(nullptr) != 0) {
        return -1.0;
      }
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return took.count() / repeats;
  });
}

}  // namespace

void bind_wholememory_tensor(py::module_& m) {
  py::class_<TensorView, View>(m, "TensorView");
  py::class_<PyTensor>(m, "Tensor")
      .def_property_readonly(
          "shape",
          [](const PyTensor& t) {
            const auto& d = description_of(t);
            return py::tuple(py::cast(std::vector<int64_t>(d.sizes, d.sizes + d.dim)));
          })
      .def("stride",
           [](const PyTensor& t) {
             const auto& d = description_of(t);
             return py::tuple(py::cast(std::vector<int64_t>(d.strides, d.strides + d.dim)));
           })
      .def("dim", [](const PyTensor& t) { return description_of(t).dim; })
      .def("storage_offset", [](const PyTensor& t) { return description_of(t).storage_offset; })
      .def_property_readonly("dtype", [](const PyTensor& t) { return description_of(t).dtype; })
      .def_property_readonly("destroyed", [](const PyTensor& t) { return t.handle == nullptr; })
      .def_property_readonly(
          "memory_type",
          [](const PyTensor& t) { return wholememory_get_memory_type(memory_of(t)); })
      .def_property_readonly(
          "memory_location",
          [](const PyTensor& t) { return wholememory_get_memory_location(memory_of(t)); })
      .def_property_readonly("comm",
                             [](const PyTensor& t) {
                               Comm comm;
                               check(wholememory_get_communicator(&comm.handle, memory_of(t)),
                                     "wholememory_get_communicator");
                               return comm;
                             })
      .def("entry_offsets", &entry_offsets)
      .def_property_readonly("local_entry_count",
                             [](const PyTensor& t) {
                               return tensor_size_value(t, wholememory_tensor_get_local_entry_count,
                                                        "wholememory_tensor_get_local_entry_count");
                             })
      .def_property_readonly("local_entry_start",
                             [](const PyTensor& t) {
                               return tensor_size_value(t, wholememory_tensor_get_local_entry_start,
                                                        "wholememory_tensor_get_local_entry_start");
                             })
      .def("local_view", &local_view, "This rank's entries (zero-copy).")
      .def("global_view", &global_view, "The whole tensor where it is mapped as one range.")
      .def("rank_views", &rank_views, "(views, first entries) of every rank's partition.")
      .def("gather", &gather, py::arg("indices"), py::arg("output"),
           "output[i] = self[indices[i]]; indices and output are numpy arrays or torch tensors.")
      .def("scatter", &scatter, py::arg("input"), py::arg("indices"))
      .def("load_from_file", &load_from_file, py::arg("files"), py::arg("round_robin_size") = 0)
      .def("store_to_file", &store_to_file, py::arg("filename"))
      .def("sub_tensor", &sub_tensor, py::arg("starts"), py::arg("ends"))
      .def("destroy", &destroy_tensor, py::arg("force") = false)
      .def_property_readonly("live_views",
                             [](const PyTensor& t) { return t.views.use_count() - 1; });
  m.def("_time_c_gather", &time_c_gather);
  m.def("create_tensor", &create_tensor, py::arg("comm"), py::arg("shape"), py::arg("dtype"),
        py::arg("memory_type"), py::arg("memory_location"), py::arg("strides") = py::none(),
        py::arg("entry_partition") = py::none(), "Collective: a new 1-D or 2-D tensor.");
}

}  // namespace memloom::python
