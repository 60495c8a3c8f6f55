#include "src/smem/smem_error.h"

namespace memloom::smem {

int32_t to_smem_code(Status status) {
  switch (status) {
    case Status::kSuccess:
      return SMEM_SUCCESS;
    case Status::kInvalidInput:
    case Status::kInvalidValue:
      return SMEM_INVALID_PARAM;
    case Status::kOutOfMemory:
      return SMEM_MALLOC_FAILED;
    case Status::kCommunication:
      return SMEM_COMM_ERROR;
    case Status::kTimeout:
      return SMEM_TIMEOUT;
    case Status::kNotFound:
      return SMEM_NOT_FOUND;
    case Status::kNotImplemented:
      return SMEM_NOT_IMPLEMENTED;
    case Status::kNotSupported:
      return SMEM_NOT_SUPPORTED;
    case Status::kInterrupted:
      return SMEM_INTERRUPTED;
    case Status::kSystem:
    case Status::kLogic:
    case Status::kDevice:
      return SMEM_ERROR;
  }
  return SMEM_ERROR;
}

}  // namespace memloom::smem
