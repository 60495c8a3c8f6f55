#include "hw/host/host_address.h"

#include <cstdlib>

namespace memloom::host {

std::string host_address() {
  const char* value = std::getenv("MEMLOOM_HOST_ADDR");
  if (value == nullptr || *value == '\0') return "127.0.0.1";
  return value;
}

std::string tcp_url(const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return "tcp://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace memloom::host
