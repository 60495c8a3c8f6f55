// Temporary memory of an operation, obtained through the caller's environment functions
// (wholememory/env_func_ptrs.h): one memory context per allocation, released when the object goes.
#pragma once

#include <cstddef>

#include "wholememory/env_func_ptrs.h"

namespace memloom::wholememory {

class TempMemory {
 public:
  // `bytes` of memory of `type`; no allocation at all for 0 bytes (data() is then null).
  // Throws kOutOfMemory when the environment returns no memory.
  TempMemory(wholememory_env_func_t* env, wholememory_memory_allocation_type_t type, size_t bytes);
  ~TempMemory();
  TempMemory(const TempMemory&) = delete;
  TempMemory& operator=(const TempMemory&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  wholememory_temp_memory_func_t functions_{};
  void* context_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// `env`, or memloom's defaults when it is null; kInvalidInput when a needed function is missing.
wholememory_env_func_t* checked_env(wholememory_env_func_t* env);

}  // namespace memloom::wholememory
