// Store addresses: "tcp://IPv4:PORT" and "tcp://[IPv6]:PORT". Only IP literals are accepted (no
// name resolution, which could block without a deadline); the parser is src/base/tcp_address.h
// under the store's rules and words.
#pragma once

#include <cstdint>
#include <string>

#include "src/base/tcp_address.h"

namespace memloom::store {

struct TcpUrl {
  std::string host;  // the IP literal, without brackets: "127.0.0.1", "::1"
  uint16_t port = 0;
  bool ipv6 = false;

  // "tcp://127.0.0.1:5000" / "tcp://[::1]:5000".
  std::string to_string() const;
};

// Throws memloom::Error(kInvalidInput) naming what is wrong with `url`. Port 0 is accepted (a
// server listening on any free port).
TcpUrl parse_tcp_url(const std::string& url);

// Formats host + port as a URL, adding brackets for IPv6 literals.
using base::format_tcp_url;

}  // namespace memloom::store
