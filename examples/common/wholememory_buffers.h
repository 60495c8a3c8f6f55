// What the WholeMemory examples (and the benchmarks beside them) build alike: tensor descriptions
// through upstream WholeMemory's own helpers, and memory from the default environment. Header
// only, so each example still builds from its own folder, here and installed
// (share/memloom/examples, cmake/installed_examples.cmake), with nothing more to link.
#pragma once

#include <wholememory/env_func_ptrs.h>
#include <wholememory/tensor_description.h>

#include <cstddef>
#include <cstdint>

namespace memloom_examples {

// rows x columns, row-major and packed (stride = columns); columns 0 means a 1-D array of `rows`.
inline wholememory_tensor_description_t packed_description(int64_t rows, int64_t columns,
                                                           wholememory_dtype_t dtype) {
  wholememory_tensor_description_t desc;
  if (columns > 0) {
    int64_t sizes[2] = {rows, columns};
    wholememory_matrix_description_t matrix =
        wholememory_create_matrix_desc(sizes, columns, 0, dtype);
    wholememory_copy_matrix_desc_to_tensor(&desc, &matrix);
  } else {
    wholememory_array_description_t array = wholememory_create_array_desc(rows, 0, dtype);
    wholememory_copy_array_desc_to_tensor(&desc, &array);
  }
  return desc;
}

// Memory from the default environment (get_default_env_func), released when the object goes:
// pinned host memory, which the host fills and reads and a GPU reaches, or device memory.
// data() is null when the allocation failed.
class EnvMemory {
 public:
  explicit EnvMemory(size_t bytes,
                     wholememory_memory_allocation_type_t type = WHOLEMEMORY_MA_PINNED) {
    auto* env = get_default_env_func();
    env->temporary_fns.create_memory_context_fn(&context_, nullptr);
    // An allocation of 0 bytes still gets a pointer, so an empty operand is not mistaken for a
    // failed one.
    wholememory_tensor_description_t desc =
        packed_description(static_cast<int64_t>(bytes > 0 ? bytes : 1), 0, WHOLEMEMORY_DT_INT8);
    data_ = env->output_fns.malloc_fn(&desc, type, context_, nullptr);
  }
  ~EnvMemory() {
    auto* env = get_default_env_func();
    env->output_fns.free_fn(context_, nullptr);
    env->temporary_fns.destroy_memory_context_fn(context_, nullptr);
  }
  EnvMemory(const EnvMemory&) = delete;
  EnvMemory& operator=(const EnvMemory&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* context_ = nullptr;
  void* data_ = nullptr;
};

}  // namespace memloom_examples
