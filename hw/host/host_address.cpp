#include "hw/host/host_address.h"

#include <cstdlib>

#include "src/base/tcp_address.h"

namespace memloom::host {

std::string host_address() {
  const char* value = std::getenv("MEMLOOM_HOST_ADDR");
  if (value == nullptr || *value == '\0') return "127.0.0.1";
  return value;
}

std::string tcp_url(const std::string& host, uint16_t port) {
  return base::format_tcp_url(host, port);
}

}  // namespace memloom::host
