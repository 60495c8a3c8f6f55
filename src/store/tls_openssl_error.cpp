#include "src/store/tls_openssl_error.h"

#include <openssl/err.h>

#include <algorithm>
#include <vector>

namespace memloom::store {

std::string take_openssl_errors() {
  std::vector<std::string> reasons;
  while (unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    std::string line = reason != nullptr ? reason : "";
    if (line.empty()) {
      char full[256];
      ERR_error_string_n(code, full, sizeof(full));
      line = full;
    }
    // OpenSSL tries several decoders and reports the same failure once per attempt.
    if (std::find(reasons.begin(), reasons.end(), line) == reasons.end()) reasons.push_back(line);
  }
  std::string text;
  for (const std::string& line : reasons) text += (text.empty() ? "" : "; ") + line;
  return text;
}

void raise_openssl(Status status, const std::string& what) {
  std::string reasons = take_openssl_errors();
  raise(status, reasons.empty() ? what : what + ": " + reasons);
}

}  // namespace memloom::store
