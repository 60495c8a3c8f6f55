// Entry-point helpers of the SHM and BM facades. Every C function runs its body through
// facade_call(), which goes through the one smem::guarded() wrapper (last error message, logging)
// and additionally lets a body report the two MemFabric codes that have no memloom::Status:
// SMEM_NOT_INITIALIZED and SMEM_REPEAT_CALL.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "memloom/error.h"
#include "src/smem/smem_error.h"

namespace memloom::smem {

// An Error that the facade reports with `code` instead of the code its status maps to.
class FacadeError : public Error {
 public:
  FacadeError(int32_t code, Status status, const std::string& message)
      : Error(status, message), code_(code) {}
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

[[noreturn]] inline void raise_not_initialized(const std::string& message) {
  throw FacadeError(SMEM_NOT_INITIALIZED, Status::kInvalidInput, message);
}
[[noreturn]] inline void raise_repeat_call(const std::string& message) {
  throw FacadeError(SMEM_REPEAT_CALL, Status::kInvalidInput, message);
}

// Runs body() and returns SMEM_SUCCESS or the failure's SMEM_* code.
template <typename Body>
int32_t facade_call(const char* function, Body&& body) {
  int32_t facade_code = SMEM_SUCCESS;
  int32_t code = guarded(function, [&] {
    try {
      body();
    } catch (const FacadeError& error) {
      facade_code = error.code();
      throw;
    }
  });
  return facade_code != SMEM_SUCCESS ? facade_code : code;
}

// The handle given to the C caller for a new object. Never reused within the process (object
// addresses are: the allocator recycles them), so a destroyed handle stays invalid instead of
// silently naming an object created after it.
inline void* fresh_handle() {
  static std::atomic<uintptr_t> next{0x5e000};
  return reinterpret_cast<void*>(next.fetch_add(16));
}

// For functions that return a value (a handle, a pointer, a rank) instead of a code: the body's
// result, or `failure` when it threw (the reason is left for smem_get_last_err_msg).
template <typename T, typename Body>
T facade_value(const char* function, T failure, Body&& body) {
  T result = failure;
  facade_call(function, [&] { result = body(); });
  return result;
}

}  // namespace memloom::smem
