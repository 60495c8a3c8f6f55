/* Compiled as C: the tensor, operation, environment and stream headers must be usable from C
 * programs (default arguments dropped). */
#include <memloom/stream.h>
#include <wholememory/env_func_ptrs.h>
#include <wholememory/wholememory_op.h>
#include <wholememory/wholememory_tensor.h>

int ops_c_header_check(void) {
  wholememory_env_func_t* env = get_default_env_func();
  wholememory_tensor_description_t desc;
  wholememory_tensor_t tensor = 0;
  if (env == 0 || env->temporary_fns.malloc_fn == 0) return 1;
  wholememory_initialize_tensor_desc(&desc);
  if (wholememory_tensor_get_root(tensor) != 0) return 2;
  if (wholememory_gather(tensor, tensor, tensor, env, 0, -1) != WHOLEMEMORY_INVALID_INPUT) return 3;
  if (memloom_stream_destroy(0) != MEMLOOM_STATUS_INVALID_INPUT) return 4;
  if (memloom_memcpy_async(0, &desc, sizeof(desc), 0) != MEMLOOM_STATUS_INVALID_INPUT) return 5;
  if (wholememory_env_test_op(tensor, tensor, 0, 0, 0, 1, env, 0) != WHOLEMEMORY_INVALID_INPUT)
    return 6;
  {
    struct cudaDeviceProp* (*device_prop)(int) = get_device_prop;
    if (device_prop == 0) return 7;
  }
  return 0;
}
