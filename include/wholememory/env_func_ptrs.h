/*
 * memloom's WholeMemory environment functions (drop-in for WholeMemory's
 * wholememory/env_func_ptrs.h): callbacks through which operations get temporary memory and
 * memory for outputs whose size only the operation knows. Each allocation has its own context:
 * create_memory_context_fn makes one, malloc_fn allocates into it (one allocation per context),
 * free_fn frees it, destroy_memory_context_fn ends it.
 *
 * get_default_env_func() returns callbacks that need nothing from the caller: device memory from
 * the backend (CUDA device memory, or emulated device memory), host memory from malloc, pinned
 * memory from malloc registered with the backend.
 */
#ifndef MEMLOOM_WHOLEMEMORY_ENV_FUNC_PTRS_H_
#define MEMLOOM_WHOLEMEMORY_ENV_FUNC_PTRS_H_

/* Upstream's header includes the CUDA runtime API, and programs rely on it for cudaStream_t and
 * cudaDeviceProp; memloom includes it where it exists, so the header still compiles without CUDA
 * (get_device_prop's struct is then only declared). */
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#endif
#endif
#include <wholememory/tensor_description.h>

#ifdef __cplusplus
extern "C" {
#endif

enum wholememory_memory_allocation_type_t {
  WHOLEMEMORY_MA_NONE = 0,
  WHOLEMEMORY_MA_DEVICE,
  WHOLEMEMORY_MA_HOST,
  WHOLEMEMORY_MA_PINNED,
};
#ifndef __cplusplus
typedef enum wholememory_memory_allocation_type_t wholememory_memory_allocation_type_t;
#endif

typedef void (*wholememory_create_memory_context_func_t)(void** memory_context,
                                                         void* global_context);
typedef void (*wholememory_destroy_memory_context_func_t)(void* memory_context,
                                                          void* global_context);
/* Returns memory for a tensor of `desc` (NULL on failure). */
typedef void* (*wholememory_malloc_func_t)(
    wholememory_tensor_description_t* desc,
    wholememory_memory_allocation_type_t memory_allocation_type, void* memory_context,
    void* global_context);
typedef void (*wholememory_free_func_t)(void* memory_context, void* global_context);

struct wholememory_temp_memory_func_t {
  wholememory_create_memory_context_func_t create_memory_context_fn;
  wholememory_destroy_memory_context_func_t destroy_memory_context_fn;
  wholememory_malloc_func_t malloc_fn;
  wholememory_free_func_t free_fn;
  void* global_context;
};
struct wholememory_output_memory_func_t {
  wholememory_malloc_func_t malloc_fn;
  wholememory_free_func_t free_fn;
  void* global_context;
};
struct wholememory_env_func_t {
  struct wholememory_temp_memory_func_t temporary_fns; /* temporary memory of an operation */
  struct wholememory_output_memory_func_t output_fns;  /* outputs sized by the operation */
};
#ifndef __cplusplus
typedef struct wholememory_temp_memory_func_t wholememory_temp_memory_func_t;
typedef struct wholememory_output_memory_func_t wholememory_output_memory_func_t;
typedef struct wholememory_env_func_t wholememory_env_func_t;
#endif

/* memloom's default callbacks (see above); never NULL, valid for the whole process. */
wholememory_env_func_t* get_default_env_func(void);

/* The CUDA properties of device dev_id (-1: the current device), valid for the whole process.
 * NULL (with an error logged) for a device that does not exist, and on the emulated backend,
 * whose devices have no CUDA properties. */
struct cudaDeviceProp;
struct cudaDeviceProp* get_device_prop(int dev_id);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_WHOLEMEMORY_ENV_FUNC_PTRS_H_ */
