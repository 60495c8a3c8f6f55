// The work of one embedding or graph operation on the caller's stream: temporary device memory
// from the caller's environment (released only once the stream is done with it, also when the
// operation fails), uploads of host values, kernels of the shared table and read-backs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/hal/kernels.h"
#include "hw/hal/stream.h"
#include "src/wholememory/ops/op_stream.h"
#include "src/wholememory/ops/temp_memory.h"
#include "src/wholememory/tensor/tensor.h"
#include "wholememory/env_func_ptrs.h"

namespace memloom::wholememory {

class StreamWork {
 public:
  // `stream_handle` as the operation APIs take it (NULL: the default stream); `env` may be null.
  StreamWork(void* stream_handle, wholememory_env_func_t* env);
  ~StreamWork();
  StreamWork(const StreamWork&) = delete;
  StreamWork& operator=(const StreamWork&) = delete;

  // Work enqueued through the stream makes the destructor wait for it.
  hal::Stream& stream() {
    drained_ = false;
    return stream_->stream();
  }
  wholememory_env_func_t* env() const { return env_; }
  int device() const { return device_; }

  // Device-readable temporary memory (null for 0 bytes).
  void* device_buffer(size_t bytes);
  // A device-readable copy of `values`, copied on the stream.
  template <typename T>
  T* upload(const std::vector<T>& values) {
    return static_cast<T*>(upload_bytes(values.data(), values.size() * sizeof(T)));
  }
  void* upload_bytes(const void* data, size_t bytes);
  // Copies `bytes` from `source` (any memory the stream reaches) to `host` and waits.
  void read(void* host, const void* source, size_t bytes);
  template <class Args>
  void launch(hal::KernelId id, const Args& args, size_t work_items) {
    if (work_items == 0) return;
    stream().launch(hal::KernelLaunch{id, &args, sizeof(args), work_items});
  }
  void synchronize();

 private:
  std::shared_ptr<OpStream> stream_;
  wholememory_env_func_t* env_;
  int device_;
  std::vector<std::vector<char>> staged_;  // host sources of uploads, kept until synchronize
  std::vector<std::unique_ptr<TempMemory>> buffers_;
  // Nothing enqueued since the last synchronize: the destructor need not wait again (an event
  // and its poll, on the path of every synchronous operation that ends with a synchronize).
  bool drained_ = true;
};

// A tensor made from a pointer, checked: its first element, its description.
struct LocalArray {
  void* data = nullptr;
  int64_t count = 0;  // 1-D: elements; 2-D: rows
  int64_t columns = 1;
  int64_t stride = 1;
  wholememory_dtype_t dtype = WHOLEMEMORY_DT_UNKNOWN;
};

// `handle` must be a tensor made from a pointer, of `dims` dimensions (1 or 2) and one of the
// `dtypes`; kInvalidInput naming `what` otherwise.
LocalArray local_array(wholememory_tensor_t handle, int dims,
                       const std::vector<wholememory_dtype_t>& dtypes, const std::string& what);

// A 1-D description of `count` elements of `dtype`.
wholememory_tensor_description_t array_description(int64_t count, wholememory_dtype_t dtype);
// A packed row-major rows x columns description (stride = columns).
wholememory_tensor_description_t matrix_description(int64_t rows, int64_t columns,
                                                    wholememory_dtype_t dtype);

// An operation's output of `count` elements, from env's output allocator with `context` (the
// caller's memory context); kOutOfMemory naming `what` when it returns none.
void* output_malloc(wholememory_env_func_t* env, void* context, int64_t count,
                    wholememory_dtype_t dtype, const char* what);

// The elements of a 1-D INT or INT64 array as int64, read through the stream (waits).
std::vector<int64_t> read_integers(StreamWork& work, const LocalArray& array);

}  // namespace memloom::wholememory
