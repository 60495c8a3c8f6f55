// WholeMemory tensors: a description over a WholeMemory allocation or over memory the caller owns,
// and the registry that turns wholememory_tensor_t handles into them. Handles are registry ids, so
// a destroyed or garbage handle is refused instead of dereferenced.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "wholememory/tensor_description.h"
#include "wholememory/wholememory.h"
#include "wholememory/wholememory_tensor.h"

namespace memloom::wholememory {

struct Tensor {
  bool is_wholememory = false;
  wholememory_handle_t handle = nullptr;  // WholeMemory tensors
  void* storage = nullptr;                // tensors made from a pointer
  wholememory_tensor_description_t desc{};
  wholememory_tensor_t root = nullptr;  // the tensor this one was cut from (itself for a root)
  bool owns_handle = false;             // made by wholememory_create_tensor
};

// A 1-D or 2-D tensor seen as a matrix: element (r, c) at storage element offset + r * stride + c.
// A 1-D tensor is a matrix of one column.
struct MatrixShape {
  int64_t rows = 0;
  int64_t columns = 0;
  int64_t stride = 0;
  int64_t offset = 0;
  wholememory_dtype_t dtype = WHOLEMEMORY_DT_UNKNOWN;

  size_t element_bytes() const;
  // Bytes of one entry of the underlying storage (a row including its padding).
  size_t entry_bytes() const { return static_cast<size_t>(stride) * element_bytes(); }
  // The storage entry holding row 0, and the column of the storage entry where the tensor starts.
  int64_t first_entry() const { return offset / stride; }
  int64_t column_offset() const { return offset % stride; }
};

// Checks that `desc` is a valid 1-D or 2-D tensor with unit inner stride (kInvalidInput naming
// `what` otherwise) and returns it as a matrix.
MatrixShape matrix_shape(const wholememory_tensor_description_t& desc, const char* what);

// A WholeMemory tensor's rows must each lie inside one entry of its storage (entries never
// straddle ranks); kInvalidInput otherwise.
void check_rows_within_entries(const MatrixShape& shape, const char* what);

class TensorRegistry {
 public:
  static TensorRegistry& instance();

  // Registers the tensor; a null root makes it its own root.
  wholememory_tensor_t add(Tensor tensor);
  // A copy of the tensor; kInvalidInput for a handle that is not a live tensor.
  Tensor get(wholememory_tensor_t handle) const;
  // The registered object (its description is handed out by pointer); null when not live.
  Tensor* find(wholememory_tensor_t handle);
  // Unregisters; kInvalidInput for a handle that is not a live tensor.
  Tensor remove(wholememory_tensor_t handle);
  int64_t count() const;

 private:
  TensorRegistry() = default;
  mutable std::mutex mutex_;
  uintptr_t last_id_ = 0;
  std::map<uintptr_t, std::unique_ptr<Tensor>> tensors_;
};

}  // namespace memloom::wholememory
