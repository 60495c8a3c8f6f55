#include "src/wholememory/ops/temp_memory.h"

#include <string>

#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::wholememory {

wholememory_env_func_t* checked_env(wholememory_env_func_t* env) {
  if (env == nullptr) return get_default_env_func();
  const auto& temp = env->temporary_fns;
  MEMLOOM_CHECK_ARG(temp.create_memory_context_fn != nullptr &&
                        temp.destroy_memory_context_fn != nullptr && temp.malloc_fn != nullptr &&
                        temp.free_fn != nullptr,
                    "p_env_fns->temporary_fns is missing a function");
  return env;
}

TempMemory::TempMemory(wholememory_env_func_t* env, wholememory_memory_allocation_type_t type,
                       size_t bytes)
    : functions_(env->temporary_fns), bytes_(bytes) {
  if (bytes == 0) return;
  functions_.create_memory_context_fn(&context_, functions_.global_context);
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = 1;
  desc.sizes[0] = static_cast<int64_t>(bytes);
  desc.dtype = WHOLEMEMORY_DT_INT8;
  data_ = functions_.malloc_fn(&desc, type, context_, functions_.global_context);
  if (data_ == nullptr) {
    functions_.destroy_memory_context_fn(context_, functions_.global_context);
    raise(Status::kOutOfMemory, "the environment's temporary malloc returned no memory for " +
                                    std::to_string(bytes) + " bytes");
  }
}

TempMemory::~TempMemory() {
  if (bytes_ == 0) return;
  functions_.free_fn(context_, functions_.global_context);
  functions_.destroy_memory_context_fn(context_, functions_.global_context);
}

}  // namespace memloom::wholememory
