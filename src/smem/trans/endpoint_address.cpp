#include "src/smem/trans/endpoint_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "memloom/error.h"

namespace memloom::smem::trans {
namespace {

[[noreturn]] void refuse(const std::string& unique_id, const std::string& why) {
  raise(Status::kInvalidInput,
        "uniqueId '" + unique_id + "' is not 'IPv4:port' or '[IPv6]:port': " + why);
}

uint16_t parse_port(const std::string& unique_id, const std::string& text) {
  if (text.empty() || text.size() > 5) refuse(unique_id, "bad port '" + text + "'");
  uint32_t port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') refuse(unique_id, "bad port '" + text + "'");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) refuse(unique_id, "port must be 1..65535");
  return static_cast<uint16_t>(port);
}

}  // namespace

EndpointAddress EndpointAddress::parse(const std::string& unique_id) {
  EndpointAddress result;
  result.text = unique_id;
  std::string host;
  std::string port;
  if (!unique_id.empty() && unique_id.front() == '[') {
    auto close = unique_id.find(']');
    if (close == std::string::npos) refuse(unique_id, "missing ']'");
    if (close + 1 >= unique_id.size() || unique_id[close + 1] != ':') {
      refuse(unique_id, "missing ':port' after ']'");
    }
    host = unique_id.substr(1, close - 1);
    port = unique_id.substr(close + 2);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_port = htons(parse_port(unique_id, port));
    if (::inet_pton(AF_INET6, host.c_str(), &address.sin6_addr) != 1) {
      refuse(unique_id, "'" + host + "' is not an IPv6 address");
    }
    std::memcpy(&result.storage, &address, sizeof(address));
    result.length = sizeof(address);
    return result;
  }
  auto colon = unique_id.rfind(':');
  if (colon == std::string::npos) refuse(unique_id, "missing ':port'");
  host = unique_id.substr(0, colon);
  port = unique_id.substr(colon + 1);
  if (host.find(':') != std::string::npos) refuse(unique_id, "IPv6 addresses need brackets");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(parse_port(unique_id, port));
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    refuse(unique_id, "'" + host + "' is not an IPv4 address");
  }
  std::memcpy(&result.storage, &address, sizeof(address));
  result.length = sizeof(address);
  return result;
}

}  // namespace memloom::smem::trans
