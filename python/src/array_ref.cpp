#include "array_ref.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

namespace memloom::python {

namespace {

using dlpack::DLDataType;
using dlpack::DLDevice;
using dlpack::DLManagedTensor;
using dlpack::DLManagedTensorVersioned;
using dlpack::DLTensor;

[[noreturn]] void type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}
[[noreturn]] void value_error(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw py::error_already_set();
}
[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

// Elements of a buffer-protocol format ("<f", "=i", "q", ...) as a WholeMemory type.
wholememory_dtype_t dtype_from_format(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return itemsize == 1 ? WHOLEMEMORY_DT_INT8 : WHOLEMEMORY_DT_UNKNOWN;
  while (*format == '<' || *format == '=' || *format == '@' || *format == '!' || *format == '>') {
    if (*format == '>' || *format == '!') return WHOLEMEMORY_DT_UNKNOWN;  // big-endian
    ++format;
  }
  if (format[0] == '\0' || format[1] != '\0') return WHOLEMEMORY_DT_UNKNOWN;
  switch (format[0]) {
    case 'f':
      return WHOLEMEMORY_DT_FLOAT;
    case 'd':
      return WHOLEMEMORY_DT_DOUBLE;
    case 'e':
      return WHOLEMEMORY_DT_HALF;
    case 'b':
    case 'B':  // bytes, bytearray: raw bytes, moved as int8
      return WHOLEMEMORY_DT_INT8;
    case 'h':
      return WHOLEMEMORY_DT_INT16;
    case 'i':
    case 'l':
    case 'q':
      return itemsize == 4   ? WHOLEMEMORY_DT_INT
             : itemsize == 8 ? WHOLEMEMORY_DT_INT64
                             : WHOLEMEMORY_DT_UNKNOWN;
    default:
      return WHOLEMEMORY_DT_UNKNOWN;
  }
}

void finish(ArrayRef& ref) {
  int64_t expected = 1, count = 1;
  ref.contiguous = true;
  for (size_t i = ref.shape.size(); i-- > 0;) {
    if (ref.shape[i] != 1 && ref.strides[i] != expected) ref.contiguous = false;
    expected *= ref.shape[i];
    count *= ref.shape[i];
  }
  ref.bytes = static_cast<size_t>(count) * ref.element_bytes;
  ref.described = true;
}

void from_buffer(py::handle obj, ArrayRef& ref) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_RECORDS_RO) != 0) throw py::error_already_set();
  ref.data = view.buf;
  ref.writable = !view.readonly;
  ref.element_bytes = static_cast<size_t>(view.itemsize);
  ref.dtype = dtype_from_format(view.format, view.itemsize);
  for (int i = 0; i < view.ndim; ++i) {
    ref.shape.push_back(view.shape[i]);
    ref.strides.push_back(view.itemsize > 0 ? view.strides[i] / view.itemsize : 0);
  }
  if (view.ndim == 0) {
    ref.shape.push_back(1);
    ref.strides.push_back(1);
  }
  PyBuffer_Release(&view);
  finish(ref);
}

void from_dltensor(const DLTensor& tensor, bool read_only, ArrayRef& ref) {
  ref.data = static_cast<char*>(tensor.data) + tensor.byte_offset;
  ref.device = tensor.device;
  ref.writable = !read_only;
  ref.dtype = dtype_from_dlpack(tensor.dtype);
  ref.element_bytes = (tensor.dtype.bits * tensor.dtype.lanes + 7) / 8;
  int64_t compact = 1;
  std::vector<int64_t> strides(tensor.ndim);
  for (int i = tensor.ndim; i-- > 0;) {
    strides[i] = tensor.strides != nullptr ? tensor.strides[i] : compact;
    compact *= tensor.shape[i];
  }
  for (int i = 0; i < tensor.ndim; ++i) ref.shape.push_back(tensor.shape[i]);
  ref.strides = std::move(strides);
  if (tensor.ndim == 0) {
    ref.shape.push_back(1);
    ref.strides.push_back(1);
  }
  finish(ref);
}

void from_dlpack(py::handle obj, ArrayRef& ref) {
  py::object capsule;
  {
    // Newer producers (numpy 2, torch 2.4+) hand out versioned capsules when asked; older ones
    // reject the keyword with TypeError and are asked again without it.
    PyObject* method = PyObject_GetAttrString(obj.ptr(), "__dlpack__");
    if (method == nullptr) throw py::error_already_set();
    py::object dlpack_method = py::reinterpret_steal<py::object>(method);
    try {
      capsule = dlpack_method(py::arg("max_version") = py::make_tuple(1, 0));
    } catch (py::error_already_set& error) {
      if (!error.matches(PyExc_TypeError)) throw;
      capsule = dlpack_method();
    }
  }
  // The capsule stays unconsumed: its own destructor releases the producer's tensor when it goes
  // at the end of this function, while obj itself keeps the memory alive for the call.
  if (PyCapsule_IsValid(capsule.ptr(), dlpack::kVersionedCapsuleName)) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule.ptr(), dlpack::kVersionedCapsuleName));
    if (managed->version.major != 1) {
      buffer_error("DLPack version " + std::to_string(managed->version.major) +
                   " is not supported (1.x is)");
    }
    from_dltensor(managed->dl_tensor, (managed->flags & dlpack::kFlagReadOnly) != 0, ref);
  } else if (PyCapsule_IsValid(capsule.ptr(), dlpack::kCapsuleName)) {
    auto* managed =
        static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), dlpack::kCapsuleName));
    from_dltensor(managed->dl_tensor, false, ref);
  } else {
    type_error("__dlpack__ returned something other than a DLPack capsule");
  }
}

}  // namespace

wholememory_dtype_t dtype_from_dlpack(DLDataType type) {
  if (type.lanes != 1) return WHOLEMEMORY_DT_UNKNOWN;
  switch (type.code) {
    case dlpack::kDLFloat:
      return type.bits == 32   ? WHOLEMEMORY_DT_FLOAT
             : type.bits == 16 ? WHOLEMEMORY_DT_HALF
             : type.bits == 64 ? WHOLEMEMORY_DT_DOUBLE
                               : WHOLEMEMORY_DT_UNKNOWN;
    case dlpack::kDLBfloat:
      return type.bits == 16 ? WHOLEMEMORY_DT_BF16 : WHOLEMEMORY_DT_UNKNOWN;
    case dlpack::kDLInt:
      return type.bits == 8    ? WHOLEMEMORY_DT_INT8
             : type.bits == 16 ? WHOLEMEMORY_DT_INT16
             : type.bits == 32 ? WHOLEMEMORY_DT_INT
             : type.bits == 64 ? WHOLEMEMORY_DT_INT64
                               : WHOLEMEMORY_DT_UNKNOWN;
    case dlpack::kDLUInt:  // raw bytes (uint8) are moved as int8
      return type.bits == 8 ? WHOLEMEMORY_DT_INT8 : WHOLEMEMORY_DT_UNKNOWN;
    default:
      return WHOLEMEMORY_DT_UNKNOWN;
  }
}

DLDataType dlpack_from_dtype(wholememory_dtype_t dtype) {
  switch (dtype) {
    case WHOLEMEMORY_DT_FLOAT:
      return {dlpack::kDLFloat, 32, 1};
    case WHOLEMEMORY_DT_HALF:
      return {dlpack::kDLFloat, 16, 1};
    case WHOLEMEMORY_DT_DOUBLE:
      return {dlpack::kDLFloat, 64, 1};
    case WHOLEMEMORY_DT_BF16:
      return {dlpack::kDLBfloat, 16, 1};
    case WHOLEMEMORY_DT_INT:
      return {dlpack::kDLInt, 32, 1};
    case WHOLEMEMORY_DT_INT64:
      return {dlpack::kDLInt, 64, 1};
    case WHOLEMEMORY_DT_INT16:
      return {dlpack::kDLInt, 16, 1};
    case WHOLEMEMORY_DT_INT8:
      return {dlpack::kDLInt, 8, 1};
    default:
      value_error("no DLPack type for WholeMemory dtype " + std::to_string(dtype));
  }
}

const char* typestr_of(wholememory_dtype_t dtype) {
  switch (dtype) {
    case WHOLEMEMORY_DT_FLOAT:
      return "<f4";
    case WHOLEMEMORY_DT_HALF:
      return "<f2";
    case WHOLEMEMORY_DT_DOUBLE:
      return "<f8";
    case WHOLEMEMORY_DT_INT:
      return "<i4";
    case WHOLEMEMORY_DT_INT64:
      return "<i8";
    case WHOLEMEMORY_DT_INT16:
      return "<i2";
    case WHOLEMEMORY_DT_INT8:
      return "|i1";
    default:
      return nullptr;  // bfloat16 has no numpy type
  }
}

ArrayRef describe(py::handle obj, const char* what) {
  ArrayRef ref;
  if (obj.is_none()) type_error(std::string(what) + " is None");
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
    const unsigned long long address = PyLong_AsUnsignedLongLong(obj.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      value_error(std::string(what) + " is not a valid address (a negative or too large int)");
    }
    ref.data = reinterpret_cast<void*>(static_cast<uintptr_t>(address));
    return ref;
  }
  if (PyObject_CheckBuffer(obj.ptr())) {
    from_buffer(obj, ref);
    return ref;
  }
  if (PyObject_HasAttrString(obj.ptr(), "__dlpack__")) {
    from_dlpack(obj, ref);
    return ref;
  }
  type_error(std::string(what) +
             " must be an int address, an object with the buffer protocol (numpy array, "
             "bytearray) or with __dlpack__ (torch tensor), not " +
             std::string(Py_TYPE(obj.ptr())->tp_name));
}

uintptr_t address_of(py::handle obj, size_t min_bytes, bool writable, const char* what) {
  if (PyLong_CheckExact(obj.ptr())) {  // the hot path of the drop-in APIs: an int address
    const unsigned long long address = PyLong_AsUnsignedLongLong(obj.ptr());
    if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      value_error(std::string(what) + " is not a valid address (a negative or too large int)");
    }
    return static_cast<uintptr_t>(address);
  }
  const ArrayRef ref = describe(obj, what);
  if (ref.described) {
    if (!ref.contiguous) value_error(std::string(what) + " is not contiguous");
    if (writable && !ref.writable) value_error(std::string(what) + " is read-only");
    if (ref.bytes < min_bytes) {
      value_error(std::string(what) + " holds " + std::to_string(ref.bytes) + " bytes, " +
                  std::to_string(min_bytes) + " are needed");
    }
  }
  return reinterpret_cast<uintptr_t>(ref.data);
}

DLDevice device_of(const void* ptr) {
  // cuPointerGetAttribute from the driver, if (and only if) the process has loaded it: the CUDA
  // backend has then made the memory; a CPU-only process never loads CUDA for this.
  using GetAttribute = int (*)(void*, int, unsigned long long);
  static GetAttribute get_attribute = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver == nullptr
               ? nullptr
               : reinterpret_cast<GetAttribute>(dlsym(driver, "cuPointerGetAttribute"));
  }();
  if (get_attribute == nullptr) return {dlpack::kDLCPU, 0};
  constexpr int kMemoryTypeAttribute = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
  constexpr int kDeviceOrdinalAttribute = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
  constexpr unsigned kDeviceMemory = 2;       // CU_MEMORYTYPE_DEVICE
  unsigned memory_type = 0;
  int ordinal = 0;
  const auto address = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(ptr));
  if (get_attribute(&memory_type, kMemoryTypeAttribute, address) != 0 ||
      memory_type != kDeviceMemory) {
    return {dlpack::kDLCPU, 0};
  }
  if (get_attribute(&ordinal, kDeviceOrdinalAttribute, address) != 0) ordinal = 0;
  return {dlpack::kDLCUDA, ordinal};
}

}  // namespace memloom::python
