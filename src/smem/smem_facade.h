// Entry-point helpers of the SHM, BM and TRANS facades. Every C function runs its body through
// facade_call(), which goes through the one smem::guarded() wrapper (last error message, logging)
// and additionally lets a body report the two MemFabric codes that have no memloom::Status:
// SMEM_NOT_INITIALIZED (raised by HandleRegistry) and SMEM_REPEAT_CALL.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "memloom/error.h"
#include "smem/host/smem_bm_def.h"
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

// For functions that return a value (a handle, a pointer, a rank) instead of a code: the body's
// result, or `failure` when it threw (the reason is left for smem_get_last_err_msg).
template <typename T, typename Body>
T facade_value(const char* function, T failure, Body&& body) {
  T result = failure;
  facade_call(function, [&] { result = body(); });
  return result;
}

// Argument checks and constants that more than one facade (or its objects) share.

// worldSize, memberSize: how many ranks a world or an object spans.
inline void check_rank_count(const char* name, uint32_t value) {
  MEMLOOM_CHECK_ARG(value >= 1 && value <= SMEM_WORLD_SIZE_MAX,
                    std::string(name) + " " + std::to_string(value) + " is out of range [1, " +
                        std::to_string(SMEM_WORLD_SIZE_MAX) + "]");
}

// MemFabric configs give their timeouts in whole seconds; *_config_init sets each to this.
constexpr uint32_t kDefaultTimeoutSeconds = 120;
inline std::chrono::milliseconds config_seconds(uint32_t value) {
  return std::chrono::milliseconds(static_cast<int64_t>(value) * 1000);
}

// Every smem_bm_data_op_type flag: what a BM object and a TRANS engine may be asked to use.
constexpr uint32_t kKnownBmDataOps = SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_RDMA |
                                     SMEMB_DATA_OP_HOST_TCP | SMEMB_DATA_OP_DEVICE_RDMA |
                                     SMEMB_DATA_OP_HOST_URMA;
// The smem_bm_data_op_type flags that ask for RDMA (SMEMB_DATA_OP_ROCE is HOST_RDMA): a BM object
// created with one moves its cross-node copies through the UCX transport.
constexpr uint32_t kRdmaBmDataOps = SMEMB_DATA_OP_HOST_RDMA | SMEMB_DATA_OP_DEVICE_RDMA;

}  // namespace memloom::smem
