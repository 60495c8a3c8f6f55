// Maps memloom statuses to the MemFabric facade's error codes and wraps entry points.
#pragma once

#include <cstdint>

#include "smem/host/smem.h"
#include "src/base/api_guard.h"

namespace memloom::smem {

int32_t to_smem_code(Status status);

// Runs an entry point's body through base::guarded: smem::guarded("smem_bm_copy", [&] { ... })
// returns the body's failure as the mapped code (and keeps its message for smem_get_last_err_msg).
template <typename Body>
int32_t guarded(const char* function, Body&& body) {
  return base::guarded<int32_t>(function, to_smem_code, static_cast<Body&&>(body));
}

}  // namespace memloom::smem
