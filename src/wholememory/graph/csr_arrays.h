// The CSR arrays a graph operation reads: a 1-D WholeMemory tensor this process maps in full
// (CONTINUOUS, CHUNKED, single-node HIERARCHY: through its global pointer or chunk table), or a
// tensor made from a pointer, as a kernels::RowTable of one column. A DISTRIBUTED (or multi-node
// HIERARCHY) graph is not mapped here: kNotSupported, as WholeMemory's sampling, which needs the
// global reference, refuses it too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/kernels/row_copy_kernel.h"
#include "src/wholememory/runtime.h"
#include "wholememory/wholememory_tensor.h"

namespace memloom::wholememory {

struct CsrArray {
  kernels::RowTable table{};
  int64_t count = 0;
  wholememory_dtype_t dtype = WHOLEMEMORY_DT_UNKNOWN;
  std::optional<MemoryLease> lease;  // holds a WholeMemory tensor's memory for the operation
};

CsrArray csr_array(wholememory_tensor_t handle, const std::vector<wholememory_dtype_t>& dtypes,
                   const std::string& what);

}  // namespace memloom::wholememory
