#include "src/wholememory/embedding/stream_work.h"

#include <cstring>

#include "memloom/error.h"
#include "src/core/group.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

StreamWork::StreamWork(void* stream_handle, wholememory_env_func_t* env)
    : stream_(StreamRegistry::instance().resolve(stream_handle)),
      env_(checked_env(env)),
      device_(core::platform().current_device()) {}

StreamWork::~StreamWork() {
  if (!drained_) release_quietly("an operation's pending stream work", [&] { synchronize(); });
}

void* StreamWork::device_buffer(size_t bytes) {
  buffers_.push_back(std::make_unique<TempMemory>(env_, WHOLEMEMORY_MA_DEVICE, bytes));
  return buffers_.back()->data();
}

void* StreamWork::upload_bytes(const void* data, size_t bytes) {
  void* buffer = device_buffer(bytes);
  if (bytes == 0) return buffer;
  staged_.emplace_back(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  stream().copy(buffer, staged_.back().data(), bytes);
  return buffer;
}

void StreamWork::read(void* host, const void* source, size_t bytes) {
  if (bytes > 0) stream().copy(host, source, bytes);
  synchronize();
}

void StreamWork::synchronize() {
  stream_->synchronize(Deadline::after(core::default_collective_timeout()));
  staged_.clear();
  drained_ = true;
}

LocalArray local_array(wholememory_tensor_t handle, int dims,
                       const std::vector<wholememory_dtype_t>& dtypes, const std::string& what) {
  const Tensor tensor = TensorRegistry::instance().get(handle);
  MEMLOOM_CHECK_ARG(!tensor.is_wholememory, what + " must be a tensor made from a pointer");
  const auto& desc = tensor.desc;
  MEMLOOM_CHECK_ARG(desc.dim == dims, what + " must be " + std::to_string(dims) + "-D, got dim " +
                                          std::to_string(desc.dim));
  bool known = false;
  for (const auto dtype : dtypes) known = known || desc.dtype == dtype;
  MEMLOOM_CHECK_ARG(known, what + " has dtype " + std::to_string(static_cast<int>(desc.dtype)) +
                               ", which this operation does not take");
  const MatrixShape shape = matrix_shape(desc, what.c_str());
  LocalArray array;
  array.count = shape.rows;
  array.columns = shape.columns;
  array.stride = shape.stride;
  array.dtype = desc.dtype;
  array.data = static_cast<char*>(tensor.storage) +
               static_cast<size_t>(shape.offset) * shape.element_bytes();
  MEMLOOM_CHECK_ARG(array.count == 0 || tensor.storage != nullptr, what + " has no memory");
  MEMLOOM_CHECK_ARG(reinterpret_cast<uintptr_t>(array.data) % shape.element_bytes() == 0,
                    what + " is not aligned to its element size");
  return array;
}

wholememory_tensor_description_t array_description(int64_t count, wholememory_dtype_t dtype) {
  wholememory_array_description_t array = wholememory_create_array_desc(count, 0, dtype);
  wholememory_tensor_description_t desc;
  wholememory_copy_array_desc_to_tensor(&desc, &array);
  return desc;
}

wholememory_tensor_description_t matrix_description(int64_t rows, int64_t columns,
                                                    wholememory_dtype_t dtype) {
  int64_t sizes[2] = {rows, columns};
  wholememory_matrix_description_t matrix =
      wholememory_create_matrix_desc(sizes, columns, 0, dtype);
  wholememory_tensor_description_t desc;
  wholememory_copy_matrix_desc_to_tensor(&desc, &matrix);
  return desc;
}

void* output_malloc(wholememory_env_func_t* env, void* context, int64_t count,
                    wholememory_dtype_t dtype, const char* what) {
  MEMLOOM_CHECK_ARG(env->output_fns.malloc_fn != nullptr, "p_env_fns->output_fns has no malloc_fn");
  wholememory_tensor_description_t desc = array_description(count, dtype);
  void* memory = env->output_fns.malloc_fn(&desc, WHOLEMEMORY_MA_DEVICE, context,
                                           env->output_fns.global_context);
  if (memory == nullptr && count > 0) {
    raise(Status::kOutOfMemory, std::string("the output allocator returned no memory for ") + what);
  }
  return memory;
}

std::vector<int64_t> read_integers(StreamWork& work, const LocalArray& array) {
  std::vector<int64_t> values(static_cast<size_t>(array.count));
  if (array.dtype == WHOLEMEMORY_DT_INT64) {
    work.read(values.data(), array.data, values.size() * sizeof(int64_t));
    return values;
  }
  std::vector<int32_t> narrow(values.size());
  work.read(narrow.data(), array.data, narrow.size() * sizeof(int32_t));
  for (size_t i = 0; i < narrow.size(); ++i) values[i] = narrow[i];
  return values;
}

}  // namespace memloom::wholememory
