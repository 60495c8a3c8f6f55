// Memory that crosses between Python and the library, in both directions, without copies.
//
// In: describe() reads what a Python object holds: a plain integer address (as upstream's
// drop-in APIs take), anything with the buffer protocol (numpy arrays, bytearray, memoryview),
// or anything with __dlpack__ (torch tensors, CUDA arrays), asking for a versioned DLPack capsule
// first and falling back to the unversioned one.
//
// Out: View is a window on library memory (a WholeMemory tensor's local or global part): it
// speaks __dlpack__ / __dlpack_device__ (both DLPack generations) and __array_interface__, and
// keeps its owner alive for as long as any capsule or array made from it lives.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlpack_abi.h"
#include "wholememory/tensor_description.h"

namespace memloom::python {

namespace py = pybind11;

struct ArrayRef {
  void* data = nullptr;
  bool described = false;  // false for a bare integer: no size, type or device known
  size_t bytes = 0;
  wholememory_dtype_t dtype = WHOLEMEMORY_DT_UNKNOWN;
  size_t element_bytes = 1;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  bool contiguous = true;        // row-major without gaps
  bool writable = true;
  dlpack::DLDevice device{dlpack::kDLCPU, 0};
};

// What obj holds; raises TypeError for an object that is none of the kinds above (None included)
// and names it `what` in the message.
ArrayRef describe(py::handle obj, const char* what);

// The address of obj for a call that reads (writable = false) or writes at least min_bytes
// there: checks size, contiguity and writability where the object tells them.
uintptr_t address_of(py::handle obj, size_t min_bytes, bool writable, const char* what);

// The DLPack device of memory at ptr: CUDA device memory where the CUDA driver says so (loaded
// only if some library of the process already loaded it), else the CPU.
dlpack::DLDevice device_of(const void* ptr);

wholememory_dtype_t dtype_from_dlpack(dlpack::DLDataType type);
dlpack::DLDataType dlpack_from_dtype(wholememory_dtype_t dtype);
// numpy's type string ("<f4") for __array_interface__.
const char* typestr_of(wholememory_dtype_t dtype);

class View {
 public:
  View(void* data, wholememory_dtype_t dtype, std::vector<int64_t> shape,
       std::vector<int64_t> strides, py::object owner);

  void* data() const { return data_; }
  wholememory_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  dlpack::DLDevice device() const { return device_; }
  size_t nbytes() const;

  // The DLPack protocol (array API standard, 2023.12 signature).
  static py::object dlpack(py::object self, py::object stream, py::object max_version,
                           py::object dl_device, py::object copy);
  py::tuple dlpack_device() const;
  py::dict array_interface(py::object self) const;

  static void bind(py::module_& module);

 private:
  void* data_;
  wholememory_dtype_t dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  dlpack::DLDevice device_;
  py::object owner_;
};

}  // namespace memloom::python
