// Compiled only (where the CUDA toolkit's headers exist): code written for upstream's
// env_func_ptrs.h, which brings in the CUDA runtime API, compiles against memloom's header alone.
#include <wholememory/env_func_ptrs.h>

static_assert(sizeof(cudaStream_t) == sizeof(void*), "cudaStream_t comes with env_func_ptrs.h");

cudaDeviceProp* (*const memloom_upstream_get_device_prop)(int) = get_device_prop;
