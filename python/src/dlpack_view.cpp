// View: library memory handed to Python as DLPack capsules and numpy arrays (array_ref.h).
#include <string>

#include "array_ref.h"

namespace memloom::python {

namespace {

using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;
using dlpack::DLTensor;

// Owns what a capsule's DLTensor points at, and a reference to the View, which keeps the
// library object (and so the memory) alive until the consumer calls the deleter.
struct ExportContext {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  PyObject* owner = nullptr;
};

void release_context(ExportContext* context) {
  // Consumers may free a tensor on any thread, with or without the GIL; during interpreter
  // shutdown the reference is left (the process is ending anyway).
  if (Py_IsInitialized() && !_Py_IsFinalizing()) {
    PyGILState_STATE state = PyGILState_Ensure();
    Py_XDECREF(context->owner);
    PyGILState_Release(state);
  }
  delete context;
}

template <typename Managed>
void delete_managed(Managed* managed) {
  release_context(static_cast<ExportContext*>(managed->manager_ctx));
  delete managed;
}

// A capsule nobody consumed (its name unchanged) releases its tensor itself.
void destroy_unversioned_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kCapsuleName)) {
    auto* managed =
        static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, dlpack::kCapsuleName));
    managed->deleter(managed);
  }
}
void destroy_versioned_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kVersionedCapsuleName)) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, dlpack::kVersionedCapsuleName));
    managed->deleter(managed);
  }
}

void fill(DLTensor& tensor, const View& view, ExportContext& context) {
  tensor.data = view.data();
  tensor.device = view.device();
  tensor.ndim = static_cast<int32_t>(context.shape.size());
  tensor.dtype = dlpack_from_dtype(view.dtype());
  tensor.shape = context.shape.data();
  tensor.strides = context.strides.data();
  tensor.byte_offset = 0;
}

[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

}  // namespace

View::View(void* data, wholememory_dtype_t dtype, std::vector<int64_t> shape,
           std::vector<int64_t> strides, py::object owner)
    : data_(data),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      device_(device_of(data)),
      owner_(std::move(owner)) {}

size_t View::nbytes() const {
  size_t count = 1;
  for (int64_t size : shape_) count *= static_cast<size_t>(size);
  return count * wholememory_dtype_get_element_size(dtype_);
}

py::object View::dlpack(py::object self, py::object stream, py::object max_version,
                        py::object dl_device, py::object copy) {
  const View& view = self.cast<const View&>();
  (void)stream;  // every memloom operation has completed when it returns: nothing to order
  if (!copy.is_none() && copy.cast<bool>()) {
    buffer_error("memloom views are zero-copy: copy=True is not supported");
  }
  if (!dl_device.is_none()) {
    auto wanted = dl_device.cast<py::tuple>();
    if (wanted.size() != 2 || wanted[0].cast<int>() != view.device_.device_type ||
        wanted[1].cast<int>() != view.device_.device_id) {
      buffer_error("the memory is on DLPack device (" + std::to_string(view.device_.device_type) +
                   ", " + std::to_string(view.device_.device_id) +
                   "); a view on another device would need a copy");
    }
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    auto version = max_version.cast<py::tuple>();
    if (version.size() < 1) throw py::value_error("max_version must be a (major, minor) tuple");
    versioned = version[0].cast<int>() >= 1;
  }
  auto* context = new ExportContext{view.shape_, view.strides_, self.ptr()};
  Py_INCREF(self.ptr());
  if (versioned) {
    auto* managed = new DLManagedTensorVersioned{};
    managed->version = {1, 0};
    managed->manager_ctx = context;
    managed->deleter = &delete_managed<DLManagedTensorVersioned>;
    managed->flags = 0;
    fill(managed->dl_tensor, view, *context);
    PyObject* capsule =
        PyCapsule_New(managed, dlpack::kVersionedCapsuleName, &destroy_versioned_capsule);
    if (capsule == nullptr) {
      delete_managed(managed);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(capsule);
  }
  auto* managed = new DLManagedTensor{};
  managed->manager_ctx = context;
  managed->deleter = &delete_managed<DLManagedTensor>;
  fill(managed->dl_tensor, view, *context);
  PyObject* capsule = PyCapsule_New(managed, dlpack::kCapsuleName, &destroy_unversioned_capsule);
  if (capsule == nullptr) {
    delete_managed(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

py::tuple View::dlpack_device() const {
  return py::make_tuple(device_.device_type, device_.device_id);
}

py::dict View::array_interface(py::object self) const {
  (void)self;
  if (device_.device_type != dlpack::kDLCPU) {
    // numpy takes this attribute's absence as "not an array": device memory is not one for it.
    throw py::attribute_error("device memory has no __array_interface__; use __dlpack__");
  }
  const char* typestr = typestr_of(dtype_);
  if (typestr == nullptr) throw py::attribute_error("bfloat16 has no numpy type");
  const size_t element = wholememory_dtype_get_element_size(dtype_);
  py::list shape, strides;
  for (size_t i = 0; i < shape_.size(); ++i) {
    shape.append(shape_[i]);
    strides.append(strides_[i] * static_cast<int64_t>(element));
  }
  py::dict interface;
  interface["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(data_), false);
  interface["shape"] = py::tuple(shape);
  interface["strides"] = py::tuple(strides);
  interface["typestr"] = typestr;
  interface["version"] = 3;
  return interface;
}

void View::bind(py::module_& module) {
  py::class_<View>(module, "View",
                   "Zero-copy window on memloom memory: pass it to numpy.asarray, "
                   "numpy.from_dlpack or torch.from_dlpack.")
      .def("__dlpack__", &View::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &View::dlpack_device)
      .def_property_readonly(
          "__array_interface__",
          [](py::object self) { return self.cast<const View&>().array_interface(self); })
      .def_property_readonly("ptr",
                             [](const View& v) { return reinterpret_cast<uintptr_t>(v.data()); })
      .def_property_readonly("nbytes", &View::nbytes)
      .def_property_readonly("dtype", [](const View& v) { return static_cast<int>(v.dtype()); })
      .def_property_readonly("shape", [](const View& v) { return py::tuple(py::cast(v.shape())); })
      .def_property_readonly("strides",
                             [](const View& v) { return py::tuple(py::cast(v.strides())); });
}

}  // namespace memloom::python
