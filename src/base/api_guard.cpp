#include "src/base/api_guard.h"

namespace memloom::base {

void report_api_failure(const char* function, Status status, const std::string& message) {
  std::string text = std::string(function) + ": " + message + " (" + status_name(status) + ")";
  log::set_last_error(text);
  MEMLOOM_LOG(kError, text);
}

}  // namespace memloom::base
