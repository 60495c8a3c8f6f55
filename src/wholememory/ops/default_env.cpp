// memloom's default environment functions (get_default_env_func in wholememory/env_func_ptrs.h).
// Device memory comes from the backend's memory domain (so the same code serves CUDA and the
// emulated devices), through a cache of freed blocks (device_block_cache.h); host memory from the C
// heap, pinned memory from the heap registered with the backend. The callbacks are C functions:
// failures are logged and reported as a null pointer.
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>

#include "hw/hal/memory_domain.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/ops/device_block_cache.h"
#include "wholememory/env_func_ptrs.h"

namespace {

// One allocation; the memory context points to it.
struct DefaultAllocation {
  wholememory_memory_allocation_type_t type = WHOLEMEMORY_MA_NONE;
  void* pointer = nullptr;
  memloom::wholememory::DeviceBlock block;  // device memory
};

constexpr size_t kHostAlignment = 64;

void create_context(void** memory_context, void*) {
  *memory_context = new (std::nothrow) DefaultAllocation();
}

void destroy_context(void* memory_context, void*) {
  delete static_cast<DefaultAllocation*>(memory_context);
}

void release(DefaultAllocation& allocation) {
  if (allocation.pointer == nullptr) return;
  auto& domain = memloom::core::platform().memory_domain();
  switch (allocation.type) {
    case WHOLEMEMORY_MA_DEVICE:
      memloom::wholememory::DeviceBlockCache::instance().give(std::move(allocation.block));
      allocation.block = {};
      break;
    case WHOLEMEMORY_MA_PINNED:
      domain.unregister_user_memory(allocation.pointer);
      std::free(allocation.pointer);
      break;
    default:
      std::free(allocation.pointer);
  }
  allocation.pointer = nullptr;
}

void* allocate(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t type,
               void* memory_context, void*) {
  auto* allocation = static_cast<DefaultAllocation*>(memory_context);
  if (allocation == nullptr || desc == nullptr) return nullptr;
  try {
    release(*allocation);  // one allocation per context: a second malloc replaces the first
    const auto bytes = static_cast<size_t>(wholememory_get_memory_size_from_tensor(desc));
    const size_t rounded = memloom::core::round_up(bytes == 0 ? 1 : bytes, kHostAlignment);
    auto& domain = memloom::core::platform().memory_domain();
    allocation->type = type;
    switch (type) {
      case WHOLEMEMORY_MA_DEVICE:
        allocation->block = memloom::wholememory::DeviceBlockCache::instance().take(
            bytes, memloom::core::platform().current_device());
        allocation->pointer = allocation->block.pointer;
        break;
      case WHOLEMEMORY_MA_HOST:
        allocation->pointer = std::aligned_alloc(kHostAlignment, rounded);
        break;
      case WHOLEMEMORY_MA_PINNED:
        allocation->pointer = std::aligned_alloc(kHostAlignment, rounded);
        if (allocation->pointer != nullptr) {
          try {
            domain.register_user_memory(allocation->pointer, rounded);
          } catch (...) {
            std::free(allocation->pointer);
            allocation->pointer = nullptr;
            throw;
          }
        }
        break;
      default:
        MEMLOOM_LOG(kError,
                    "default env malloc: unknown allocation type " << static_cast<int>(type));
        return nullptr;
    }
    return allocation->pointer;
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kError, "default env malloc failed: " << error.what());
    allocation->pointer = nullptr;
    return nullptr;
  }
}

void free_allocation(void* memory_context, void*) {
  auto* allocation = static_cast<DefaultAllocation*>(memory_context);
  if (allocation == nullptr) return;
  try {
    release(*allocation);
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "default env free failed: " << error.what());
  }
}

wholememory_env_func_t g_default_env = {
    {create_context, destroy_context, allocate, free_allocation, nullptr},
    {allocate, free_allocation, nullptr},
};

}  // namespace

extern "C" wholememory_env_func_t* get_default_env_func(void) {
  return &g_default_env;
}
