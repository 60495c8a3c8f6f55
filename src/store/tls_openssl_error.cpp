#include "src/store/tls_openssl_error.h"

#include <openssl/err.h>

namespace memloom::store {

std::string take_openssl_errors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    if (!text.empty()) text += "; ";
    const char* reason = ERR_reason_error_string(code);
    if (reason != nullptr) {
      text += reason;
    } else {
      char full[256];
      ERR_error_string_n(code, full, sizeof(full));
      text += full;
    }
  }
  return text;
}

void raise_openssl(Status status, const std::string& what) {
  std::string reasons = take_openssl_errors();
  raise(status, reasons.empty() ? what : what + ": " + reasons);
}

}  // namespace memloom::store
