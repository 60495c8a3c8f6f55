// Calls of WholeMemory's own C functions from inside memloom: a failed code becomes the exception
// carrying the matching status, so that the outer entry point returns the same code.
#pragma once

#include <string>

#include "memloom/error.h"
#include "wholememory/wholememory.h"

namespace memloom::wholememory {

inline Status status_of_code(wholememory_error_code_t code) {
  switch (code) {
    case WHOLEMEMORY_SUCCESS:
      return Status::kSuccess;
    case WHOLEMEMORY_INVALID_INPUT:
      return Status::kInvalidInput;
    case WHOLEMEMORY_INVALID_VALUE:
      return Status::kInvalidValue;
    case WHOLEMEMORY_OUT_OF_MEMORY:
      return Status::kOutOfMemory;
    case WHOLEMEMORY_COMMUNICATION_ERROR:
      return Status::kCommunication;
    case WHOLEMEMORY_NOT_IMPLEMENTED:
      return Status::kNotImplemented;
    case WHOLEMEMORY_NOT_SUPPORTED:
      return Status::kNotSupported;
    case WHOLEMEMORY_SYSTEM_ERROR:
      return Status::kSystem;
    case WHOLEMEMORY_CUDA_ERROR:
      return Status::kDevice;
    default:
      return Status::kLogic;
  }
}

inline void check_code(wholememory_error_code_t code, const char* call) {
  if (code != WHOLEMEMORY_SUCCESS) {
    raise(status_of_code(code), std::string(call) + " failed (its reason is logged above)");
  }
}

}  // namespace memloom::wholememory
