// Maps memloom statuses to the MemFabric facade's error codes and wraps entry points.
#pragma once

#include <cstdint>

#include "smem/host/smem.h"
#include "src/core/api_guard.h"

namespace memloom::smem {

int32_t to_smem_code(Status status);

// SMEM_GUARDED("smem_bm_copy", { ... body ... }) returns the mapped code.
template <typename Body>
int32_t guarded(const char* function, Body&& body) {
  return core::guarded<int32_t>(function, to_smem_code, static_cast<Body&&>(body));
}

}  // namespace memloom::smem
