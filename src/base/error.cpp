#include "memloom/error.h"

#include <cstring>

namespace memloom {

const char* status_name(Status status) {
  switch (status) {
    case Status::kSuccess:
      return "success";
    case Status::kInvalidInput:
      return "invalid input";
    case Status::kInvalidValue:
      return "invalid value";
    case Status::kOutOfMemory:
      return "out of memory";
    case Status::kCommunication:
      return "communication error";
    case Status::kTimeout:
      return "timeout";
    case Status::kNotFound:
      return "not found";
    case Status::kNotImplemented:
      return "not implemented";
    case Status::kNotSupported:
      return "not supported";
    case Status::kSystem:
      return "system error";
    case Status::kLogic:
      return "logic error";
    case Status::kDevice:
      return "device error";
    case Status::kInterrupted:
      return "interrupted";
  }
  return "unknown status";
}

void raise(Status status, const std::string& message) {
  throw Error(status, message);
}

void raise_errno(const std::string& what, int errno_value) {
  char buffer[256];
  const char* text = strerror_r(errno_value, buffer, sizeof(buffer));
  throw Error(errno_value == ENOMEM ? Status::kOutOfMemory : Status::kSystem, what + ": " + text);
}

}  // namespace memloom
