// What the CPU and GPU embedding benchmarks build alike: tensors over the benchmark's own index and
// gradient buffers, and the error check.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "examples/common/wholememory_buffers.h"
#include "wholememory/embedding.h"

namespace memloom::bench {

inline void check_wholememory(wholememory_error_code_t code, const char* call) {
  if (code == WHOLEMEMORY_SUCCESS) return;
  throw std::runtime_error(std::string(call) + ": WholeMemory error " + std::to_string(code));
}

// The examples' packed rows x columns description (a 1-D array when columns is 0).
using memloom_examples::packed_description;

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
