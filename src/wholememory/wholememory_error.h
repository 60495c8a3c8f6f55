// Maps memloom statuses to WholeMemory error codes and runs every C entry point through the one
// shared exception boundary (base::guarded), with the argument check every entry point file needs.
#pragma once

#include <string>
#include <utility>

#include "memloom/error.h"
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

// An entry point's output pointer; a null one fails as kInvalidInput, naming the argument for the
// caller.
template <typename T>
T* checked_output(T* output, const char* name) {
  MEMLOOM_CHECK_ARG(output != nullptr, std::string(name) + " is null");
  return output;
}

}  // namespace memloom::wholememory
