#include "src/store/url.h"

#include <arpa/inet.h>

#include <charconv>

#include "memloom/error.h"

namespace memloom::store {
namespace {

constexpr std::string_view kScheme = "tcp://";

[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  raise(Status::kInvalidInput, "invalid store URL '" + url + "': " + why +
                                   " (expected tcp://IPv4:PORT or tcp://[IPv6]:PORT)");
}

bool is_ipv4(const std::string& host) {
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool is_ipv6(const std::string& host) {
  in6_addr address{};
  return ::inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

}  // namespace

std::string TcpUrl::to_string() const {
  return format_tcp_url(host, port);
}

std::string format_tcp_url(const std::string& host, uint16_t port) {
  bool bracket = host.find(':') != std::string::npos;
  return std::string(kScheme) + (bracket ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

TcpUrl parse_tcp_url(const std::string& url) {
  std::string_view text(url);
  if (text.substr(0, kScheme.size()) != kScheme) bad_url(url, "it does not start with tcp://");
  text.remove_prefix(kScheme.size());

  TcpUrl parsed;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) bad_url(url, "the '[' of the IPv6 address is not closed");
    parsed.host = std::string(text.substr(1, close - 1));
    text.remove_prefix(close + 1);
    if (text.empty() || text.front() != ':') bad_url(url, "a ':PORT' must follow the ']'");
    port_text = text.substr(1);
    if (!is_ipv6(parsed.host)) bad_url(url, "'" + parsed.host + "' is not an IPv6 address");
    parsed.ipv6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) bad_url(url, "the port is missing");
    parsed.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (parsed.host.find(':') != std::string::npos) {
      bad_url(url, "IPv6 addresses must be written in brackets");
    }
    if (parsed.host.empty()) bad_url(url, "the host is missing");
    if (!is_ipv4(parsed.host)) bad_url(url, "'" + parsed.host + "' is not an IPv4 address");
  }

  if (port_text.empty()) bad_url(url, "the port is missing");
  unsigned port = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    bad_url(url, "the port '" + std::string(port_text) + "' is not a number in 0..65535");
  }
  parsed.port = static_cast<uint16_t>(port);
  return parsed;
}

}  // namespace memloom::store
