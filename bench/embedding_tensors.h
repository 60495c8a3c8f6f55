// What the CPU and GPU embedding benchmarks build alike: a packed row-major table description,
// tensors over the benchmark's own index and gradient buffers, and the error check.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "wholememory/embedding.h"

namespace memloom::bench {

inline void check_wholememory(wholememory_error_code_t code, const char* call) {
  if (code == WHOLEMEMORY_SUCCESS) return;
  throw std::runtime_error(std::string(call) + ": WholeMemory error " + std::to_string(code));
}

// rows x columns, packed (stride = columns); columns 0 means a 1-D array of `rows` entries.
inline wholememory_tensor_description_t packed_description(int64_t rows, int64_t columns,
                                                           wholememory_dtype_t dtype) {
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = columns > 0 ? 2 : 1;
  desc.sizes[0] = rows;
  desc.sizes[1] = columns > 0 ? columns : 1;
  desc.strides[0] = columns > 0 ? columns : 1;
  desc.dtype = dtype;
  return desc;
}

// A tensor over `data` (host or device memory the caller keeps) described as above.
inline wholememory_tensor_t pointer_tensor(void* data, int64_t rows, int64_t columns,
                                           wholememory_dtype_t dtype) {
  wholememory_tensor_description_t desc = packed_description(rows, columns, dtype);
  wholememory_tensor_t tensor = nullptr;
  check_wholememory(wholememory_make_tensor_from_pointer(&tensor, data, &desc),
                    "wholememory_make_tensor_from_pointer");
  return tensor;
}

}  // namespace memloom::bench
