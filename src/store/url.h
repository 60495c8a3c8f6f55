// Store addresses: "tcp://HOST:PORT", "tcp://IPv4:PORT" and "tcp://[IPv6]:PORT" for memloom's own
// store (a host name is resolved once, when the URL is parsed, IPv4 or IPv6; the parser is
// src/base/tcp_address.h under the store's rules and words), and
// "etcd://HOST:PORT[,HOST:PORT...]" for an etcd cluster (host names allowed: the etcd client
// resolves them under its call's deadline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

struct EtcdEndpoint {
  std::string host;  // a name, an IPv4 literal, or an IPv6 literal without brackets
  uint16_t port = 0;
  std::string to_string() const;  // "host:port" / "[::1]:port"
};

struct EtcdUrl {
  std::vector<EtcdEndpoint> endpoints;  // the cluster's members, in the order given
  std::string to_string() const;        // "etcd://a:2379,b:2379"
};

inline constexpr const char* kEtcdScheme = "etcd://";

// True when `url` starts with etcd:// (whether or not the rest is valid).
bool is_etcd_url(const std::string& url);

// Throws memloom::Error(kInvalidInput) naming what is wrong with `url`; ports must be 1..65535.
EtcdUrl parse_etcd_url(const std::string& url);

// Checks a store URL a client may connect to: tcp:// (port 1..65535) or etcd://. Throws
// memloom::Error(kInvalidInput) naming the fault.
void check_client_store_url(const std::string& url);

// Formats host + port as a URL, adding brackets for IPv6 literals.
using base::format_tcp_url;

}  // namespace memloom::store
