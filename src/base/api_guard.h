// The one place where C++ exceptions become C error codes. Every C entry point of every facade
// runs its body through guarded(); nothing else catches memloom::Error at the API boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::base {

// Records the failure for the API's "last error" query and logs it.
void report_api_failure(const char* function, Status status, const std::string& message);

// Runs body() (returning void) and returns map(Status) — map(kSuccess) on success.
template <typename Code, typename Map, typename Body>
Code guarded(const char* function, Map map, Body&& body) {
  try {
    body();
    return map(Status::kSuccess);
  } catch (const Error& error) {
    report_api_failure(function, error.status(), error.what());
    return map(error.status());
  } catch (const std::bad_alloc&) {
    report_api_failure(function, Status::kOutOfMemory, "host memory allocation failed");
    return map(Status::kOutOfMemory);
  } catch (const std::exception& error) {
    report_api_failure(function, Status::kLogic, error.what());
    return map(Status::kLogic);
  } catch (...) {
    report_api_failure(function, Status::kLogic, "unknown exception");
    return map(Status::kLogic);
  }
}

}  // namespace memloom::base
