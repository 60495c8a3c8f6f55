// memloom's internal error model: C++ code throws memloom::Error carrying a Status; each C facade
// catches it in exactly one wrapper and maps the Status to its API's error code.
#pragma once

#include <stdexcept>
#include <string>

namespace memloom {

enum class Status {
  kSuccess = 0,
  kInvalidInput,    // a null pointer, a bad handle, an argument out of range
  kInvalidValue,    // a well-formed argument whose value is not allowed here
  kOutOfMemory,     // a device's or the host's capacity is exhausted
  kCommunication,   // a peer is gone, a socket failed, a collective disagreed
  kTimeout,         // a deadline passed while waiting on a peer or the store
  kNotFound,        // a key, a segment or a peer that does not exist
  kNotImplemented,  // the function exists but is not implemented yet
  kNotSupported,    // the combination is not supported by design
  kSystem,          // an OS call failed
  kLogic,           // an internal invariant broke
  kDevice,          // the accelerator runtime reported an error
  kInterrupted,     // the caller's interrupt check said stop (memloom/interrupt.h)
};

const char* status_name(Status status);

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// Throws Error(status, message). Kept out of line so call sites stay small.
[[noreturn]] void raise(Status status, const std::string& message);

// Throws kSystem with the message and strerror(errno_value).
[[noreturn]] void raise_errno(const std::string& what, int errno_value);

}  // namespace memloom

#define MEMLOOM_CHECK_ARG(cond, msg)                                        \
  do {                                                                      \
    if (!(cond)) ::memloom::raise(::memloom::Status::kInvalidInput, (msg)); \
  } while (0)
