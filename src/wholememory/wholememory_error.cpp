#include "src/wholememory/wholememory_error.h"

namespace memloom::wholememory {

wholememory_error_code_t to_wholememory_code(Status status) {
  switch (status) {
    case Status::kSuccess:
      return WHOLEMEMORY_SUCCESS;
    case Status::kInvalidInput:
    case Status::kNotFound:
      return WHOLEMEMORY_INVALID_INPUT;
    case Status::kInvalidValue:
      return WHOLEMEMORY_INVALID_VALUE;
    case Status::kOutOfMemory:
      return WHOLEMEMORY_OUT_OF_MEMORY;
    case Status::kCommunication:
    case Status::kTimeout:
      return WHOLEMEMORY_COMMUNICATION_ERROR;
    case Status::kNotImplemented:
      return WHOLEMEMORY_NOT_IMPLEMENTED;
    case Status::kNotSupported:
      return WHOLEMEMORY_NOT_SUPPORTED;
    case Status::kSystem:
    case Status::kInterrupted:  // WholeMemory has no code of its own for it
      return WHOLEMEMORY_SYSTEM_ERROR;
    case Status::kLogic:
      return WHOLEMEMORY_LOGIC_ERROR;
    case Status::kDevice:
      return WHOLEMEMORY_CUDA_ERROR;
  }
  return WHOLEMEMORY_UNKNOW_ERROR;
}

}  // namespace memloom::wholememory
