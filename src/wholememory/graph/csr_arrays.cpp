#include "src/wholememory/graph/csr_arrays.h"

#include "memloom/error.h"
#include "src/wholememory/memory_handle.h"
#include "src/wholememory/ops/row_copy_launch.h"
#include "src/wholememory/tensor/tensor.h"

namespace memloom::wholememory {

CsrArray csr_array(wholememory_tensor_t handle, const std::vector<wholememory_dtype_t>& dtypes,
                   const std::string& what) {
  const Tensor tensor = TensorRegistry::instance().get(handle);
  MEMLOOM_CHECK_ARG(tensor.desc.dim == 1,
                    what + " must be 1-D, got dim " + std::to_string(tensor.desc.dim));
  bool known = false;
  for (const auto dtype : dtypes) known = known || tensor.desc.dtype == dtype;
  MEMLOOM_CHECK_ARG(known, what + " has dtype " +
                               std::to_string(static_cast<int>(tensor.desc.dtype)) +
                               ", which this operation does not take");
  const MatrixShape shape = matrix_shape(tensor.desc, what.c_str());
  CsrArray array;
  array.count = shape.rows;
  array.dtype = tensor.desc.dtype;
  if (!tensor.is_wholememory) {
    MEMLOOM_CHECK_ARG(tensor.storage != nullptr || shape.rows == 0, what + " has no memory");
    array.table = contiguous_table(tensor.storage, shape);
    return array;
  }
  array.lease.emplace(Runtime::instance().lease(tensor.handle));
  const auto& memory = *array.lease;
  if (!memory->has_global_reference()) {
    raise(Status::kNotSupported,
          what +
              " is a WholeMemory tensor this process does not map in full (DISTRIBUTED, or "
              "HIERARCHY over several nodes): graph operations need CONTINUOUS or CHUNKED");
  }
  array.table = memory->global_pointer() != nullptr
                    ? contiguous_table(memory->global_pointer(), shape)
                    : chunked_table(memory->global_reference(), shape);
  return array;
}

}  // namespace memloom::wholememory
