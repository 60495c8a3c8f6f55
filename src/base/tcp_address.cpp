#include "src/base/tcp_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace memloom::base {
namespace {

constexpr std::string_view kScheme = "tcp://";

struct HostPort {
  std::string_view host;  // without brackets
  std::string_view port;
  bool bracketed = false;
};

TcpAddressFault split_host_port(std::string_view text, bool at_last_colon, HostPort* split) {
  if (at_last_colon) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return TcpAddressFault::kNoPort;
    split->host = text.substr(0, colon);
    split->port = text.substr(colon + 1);
    split->bracketed =
        split->host.size() >= 2 && split->host.front() == '[' && split->host.back() == ']';
    if (split->bracketed) split->host = split->host.substr(1, split->host.size() - 2);
    return TcpAddressFault::kNone;
  }
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return TcpAddressFault::kUnclosedBracket;
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return TcpAddressFault::kNoColonAfterBracket;
    }
    split->host = text.substr(1, close - 1);
    split->port = text.substr(close + 2);
    split->bracketed = true;
    return TcpAddressFault::kNone;
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return TcpAddressFault::kNoPort;
  split->host = text.substr(0, colon);
  split->port = text.substr(colon + 1);
  return TcpAddressFault::kNone;
}

// White space as strtol skips it in the C locale.
bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

TcpAddressFault parse_port(std::string_view text, const TcpAddressRules& rules, uint16_t* port) {
  if (text.empty()) return TcpAddressFault::kEmptyPort;
  if (rules.port_syntax == PortSyntax::kUpToFiveDigits && text.size() > 5) {
    return TcpAddressFault::kBadPort;
  }
  size_t at = 0;
  if (rules.port_syntax == PortSyntax::kStrtol) {
    while (at < text.size() && is_space(text[at])) ++at;
    if (at < text.size() && text[at] == '+') ++at;
  }
  if (at == text.size()) return TcpAddressFault::kBadPort;
  uint32_t value = 0;
  for (; at < text.size(); ++at) {
    if (text[at] < '0' || text[at] > '9') return TcpAddressFault::kBadPort;
    // Saturates past 65535: any longer number is out of range, however long.
    value = std::min<uint32_t>(value * 10 + static_cast<uint32_t>(text[at] - '0'), 65536);
  }
  if (value < rules.min_port || value > 65535) return TcpAddressFault::kPortOutOfRange;
  *port = static_cast<uint16_t>(value);
  return TcpAddressFault::kNone;
}

// Fills `address` from a literal of `family` (port 0); its length, or 0 when it is none.
socklen_t literal_address(int family, const std::string& host, sockaddr_storage* address) {
  std::memset(address, 0, sizeof(*address));
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(address);
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1) return 0;
    v4->sin_family = AF_INET;
    return sizeof(sockaddr_in);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(address);
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) != 1) return 0;
  v6->sin6_family = AF_INET6;
  return sizeof(sockaddr_in6);
}

TcpAddressFault parse_host(bool bracketed, const TcpAddressRules& rules, ParsedTcpAddress* parsed) {
  TcpAddress* address = &parsed->address;
  address->name = address->host;
  if (rules.resolve_names && !bracketed && !address->host.empty() &&
      address->host.find(':') == std::string::npos &&
      ip_socket_address(address->host, 0, &address->storage) == 0) {
    address->length = resolve_host_name(address->host, &address->storage, &parsed->resolve_error);
    if (address->length == 0) return TcpAddressFault::kNotIpv4;
    address->host = address_text(address->storage);
    return TcpAddressFault::kNone;
  }
  if (rules.either_family) {
    address->length = ip_socket_address(address->host, 0, &address->storage);
  } else {
    address->length =
        literal_address(bracketed ? AF_INET6 : AF_INET, address->host, &address->storage);
  }
  if (address->length != 0) return TcpAddressFault::kNone;
  if (bracketed) return TcpAddressFault::kNotIpv6;
  return address->host.empty() ? TcpAddressFault::kEmptyHost : TcpAddressFault::kNotIpv4;
}

}  // namespace

ParsedTcpAddress parse_tcp_address(std::string_view text, const TcpAddressRules& rules) {
  ParsedTcpAddress parsed;
  auto fail = [&parsed](TcpAddressFault fault) {
    parsed.fault = fault;
    return parsed;
  };
  if (rules.scheme) {
    if (text.substr(0, kScheme.size()) != kScheme) return fail(TcpAddressFault::kNoScheme);
    text.remove_prefix(kScheme.size());
  }
  HostPort split;
  TcpAddressFault fault = split_host_port(text, rules.split_at_last_colon, &split);
  if (fault != TcpAddressFault::kNone) return fail(fault);
  TcpAddress& address = parsed.address;
  address.host = std::string(split.host);
  parsed.port_text = std::string(split.port);
  if (rules.name_unbracketed_ipv6 && !split.bracketed &&
      address.host.find(':') != std::string::npos) {
    return fail(TcpAddressFault::kUnbracketedIpv6);
  }
  if (rules.host_before_port) {
    fault = parse_host(split.bracketed, rules, &parsed);
    if (fault == TcpAddressFault::kNone) fault = parse_port(split.port, rules, &address.port);
  } else {
    fault = parse_port(split.port, rules, &address.port);
    if (fault == TcpAddressFault::kNone) fault = parse_host(split.bracketed, rules, &parsed);
  }
  if (fault != TcpAddressFault::kNone) return fail(fault);
  set_socket_port(&address.storage, address.port);
  return parsed;
}

std::string format_tcp_url(std::string_view host, uint16_t port) {
  const bool bracket = host.find(':') != std::string_view::npos;
  std::string url(kScheme);
  if (bracket) url += '[';
  url += host;
  if (bracket) url += ']';
  return url + ":" + std::to_string(port);
}

socklen_t ip_socket_address(const std::string& host, uint16_t port, sockaddr_storage* address) {
  socklen_t length = literal_address(AF_INET, host, address);
  if (length == 0) length = literal_address(AF_INET6, host, address);
  if (length != 0) set_socket_port(address, port);
  return length;
}

socklen_t resolve_host_name(const std::string& name, sockaddr_storage* address,
                            std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int code = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (code != 0 || found == nullptr) {
    *error = code != 0 ? ::gai_strerror(code) : "no address";
    return 0;
  }
  std::memset(address, 0, sizeof(*address));
  const socklen_t length = found->ai_addrlen;
  std::memcpy(address, found->ai_addr, length);
  ::freeaddrinfo(found);
  return length;
}

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      address.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&address)->sin_addr);
  ::inet_ntop(address.ss_family, raw, text, sizeof(text));
  return text;
}

uint16_t socket_port(const sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET6
                   ? reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port
                   : reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void set_socket_port(sockaddr_storage* address, uint16_t port) {
  if (address->ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(port);
  }
}

}  // namespace memloom::base
