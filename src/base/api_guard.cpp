#include "src/base/api_guard.h"

namespace memloom::base {

void report_api_failure(const char* function, Status status, const std::string& message) {
  std::string text = std::string(function) + ": " + message + " (" + status_name(status) + ")";
  log::set_last_error(text);
  // "Not there yet" is a state callers poll for (a BM peer that has not joined), not a fault:
  // logging it at error would print lines on every successful run.
  if (status == Status::kNotFound) {
    MEMLOOM_LOG(kDebug, text);
  } else {
    MEMLOOM_LOG(kError, text);
  }
}

}  // namespace memloom::base
