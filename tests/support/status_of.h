// The status a call ends with: kSuccess when it returns, the Error's status when it throws one.
// For tests that check error codes of internal (throwing) interfaces.
#pragma once

#include <functional>

#include "memloom/error.h"

namespace memloom::testing {

inline Status status_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.status();
  }
  return Status::kSuccess;
}

}  // namespace memloom::testing
