// The Python objects over WholeMemory handles. A destroyed object keeps its Python wrapper, whose
// methods then raise WholeMemoryError(INVALID_INPUT) instead of passing a stale handle on.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "array_ref.h"

#include "errors.h"
#include "wholememory/wholememory.h"
#include "wholememory/wholememory_tensor.h"

namespace memloom::python {

namespace py = pybind11;

struct Comm {
  wholememory_comm_t handle = nullptr;
  bool owned = false;  // made by create/split here (so destroy() is allowed), not borrowed

  wholememory_comm_t get() const {
    if (handle == nullptr) {
      raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "the communicator was destroyed");
    }
    return handle;
  }
};

struct Tensor {
  wholememory_tensor_t handle = nullptr;
  bool owned = false;  // created here: destroy() frees the memory (collectively)

  wholememory_tensor_t get() const {
    if (handle == nullptr) {
      raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "the tensor was destroyed");
    }
    return handle;
  }
};

// A Tensor as Python holds it: the handle plus a token that every View of it copies, so destroy()
// can tell whether memory it would free is still visible to Python.
struct PyTensor : Tensor {
  std::shared_ptr<int> views = std::make_shared<int>(0);
};

// A tensor over a Python array's memory, released when this goes.
class BorrowedTensor {
 public:
  BorrowedTensor(const ArrayRef& ref, int dims_wanted, const char* what) {
    if (!ref.described) {
      throw py::type_error(std::string(what) + " must be an array (numpy or torch), not an int");
    }
    if (ref.dtype == WHOLEMEMORY_DT_UNKNOWN) {
      throw py::type_error(std::string(what) + " has an element type WholeMemory lacks");
    }
    if (static_cast<int>(ref.shape.size()) != dims_wanted) {
      throw py::value_error(std::string(what) + " must be " + std::to_string(dims_wanted) +
                            "-D, got " + std::to_string(ref.shape.size()) + "-D");
    }
    if (ref.strides.back() != 1 && ref.shape.back() != 1) {
      throw py::value_error(std::string(what) + " needs a unit inner stride");
    }
    wholememory_tensor_description_t desc;
    wholememory_initialize_tensor_desc(&desc);
    desc.dim = dims_wanted;
    desc.dtype = ref.dtype;
    for (int i = 0; i < dims_wanted; ++i) {
      desc.sizes[i] = ref.shape[i];
      desc.strides[i] = ref.strides[i];
    }
    if (dims_wanted == 2 && ref.shape[0] <= 1) desc.strides[0] = ref.shape[1];
    desc.strides[dims_wanted - 1] = 1;
    check(wholememory_make_tensor_from_pointer(&tensor_, ref.data, &desc),
          "wholememory_make_tensor_from_pointer");
  }
  ~BorrowedTensor() {
    if (tensor_ != nullptr) wholememory_destroy_tensor(tensor_);
  }
  BorrowedTensor(const BorrowedTensor&) = delete;
  BorrowedTensor& operator=(const BorrowedTensor&) = delete;
  wholememory_tensor_t get() const { return tensor_; }

 private:
  wholememory_tensor_t tensor_ = nullptr;
};

void bind_wholememory_comm(py::module_& module);
void bind_wholememory_tensor(py::module_& module);
void bind_wholememory_embedding(py::module_& module);
void bind_wholegraph_sample(py::module_& module);
void bind_graph_op(py::module_& module);

}  // namespace memloom::python
