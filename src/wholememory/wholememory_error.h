// Maps memloom statuses to WholeMemory error codes and runs every C entry point through the one
// shared exception boundary (base::guarded).
#pragma once

#include <utility>

#include "src/base/api_guard.h"
#include "wholememory/wholememory.h"

namespace memloom::wholememory {

wholememory_error_code_t to_wholememory_code(Status status);

// Runs body() and returns its outcome as an error code.
template <typename Body>
wholememory_error_code_t guarded(const char* function, Body&& body) {
  return base::guarded<wholememory_error_code_t>(function, to_wholememory_code,
                                                 std::forward<Body>(body));
}

// For entry points that return a value rather than a code: body() returns T; on failure the
// reason is logged and `fallback` returned.
template <typename T, typename Body>
T guarded_value(const char* function, T fallback, Body&& body) {
  T result = fallback;
  guarded(function, [&] { result = body(); });
  return result;
}

}  // namespace memloom::wholememory
