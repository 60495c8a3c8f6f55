// TCP endpoint addresses, "tcp://HOST:PORT" with IPv6 literals in brackets, parsed and formatted in
// one place for every module that names one: the store's URLs, both backends' transport addresses
// and TRANS's uniqueIds (the same without the scheme). Hosts are IP literals, and where a user
// names the address (store URLs: MEMLOOM_STORE_URL, MASTER_ADDR, memloom-run --store) also host
// names, resolved once here through the system resolver (IPv4 or IPv6, its first answer), so every
// later connect goes to the same socket. Data-path addresses stay literals: a peer publishes its
// own.
//
// The parser reports what is wrong as a fault, not a message: its callers grew up with their own
// parsers and each still words (and orders) its refusals its own way, which its users and tests
// see. TcpAddressRules holds where they differ; each caller turns a fault into its message.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace memloom::base {

enum class PortSyntax {
  kDigits,          // decimal digits only
  kUpToFiveDigits,  // 1 to 5 decimal digits (TRANS uniqueIds)
  kStrtol,          // as std::stoi/strtoul read it: leading white space and a '+' are allowed
};

struct TcpAddressRules {
  bool scheme = true;  // the text starts with "tcp://"
  // The port follows the last ':' even after a '['; brackets then count only around the whole
  // host, and a ':' first means no port (the emulated transport's reading).
  bool split_at_last_colon = false;
  // Names a ':' in a host without brackets (kUnbracketedIpv6) before the port is read.
  bool name_unbracketed_ipv6 = false;
  // Checks the host before the port (else the port first): decides which of two faults is named.
  bool host_before_port = false;
  // Takes an IPv4 or IPv6 literal with brackets or without; else brackets mean IPv6.
  bool either_family = false;
  PortSyntax port_syntax = PortSyntax::kDigits;
  uint16_t min_port = 1;  // 0 where the caller listens on any free port
  // A host without brackets that is no IP literal is looked up as a name; one that does not
  // resolve is kNotIpv4 with resolve_error set.
  bool resolve_names = false;
};

enum class TcpAddressFault {
  kNone,
  kNoScheme,             // does not start with "tcp://"
  kUnclosedBracket,      // a '[' without its ']'
  kNoColonAfterBracket,  // the ']' is not followed by ':'
  kNoPort,               // no ':' (split_at_last_colon: also a ':' first)
  kUnbracketedIpv6,      // a ':' in a host without brackets (name_unbracketed_ipv6)
  kEmptyHost,            // nothing before the ':' (a host without brackets)
  kNotIpv4,              // a host without brackets that is not an IPv4 literal (either_family: not
                         // an IP literal of either family)
  kNotIpv6,              // a host in brackets that is not an IPv6 literal (either_family: not an IP
                         // literal of either family)
  kEmptyPort,            // nothing after the ':'
  kBadPort,              // not a number in the port syntax
  kPortOutOfRange,       // a number outside min_port..65535
};

struct TcpAddress {
  std::string host;  // the IP literal, without brackets: "127.0.0.1", "::1"
  std::string name;  // the host as written: a name, or the literal itself
  uint16_t port = 0;
  sockaddr_storage storage{};  // host and port, ready for bind() and connect()
  socklen_t length = 0;

  bool ipv6() const { return storage.ss_family == AF_INET6; }
};

struct ParsedTcpAddress {
  TcpAddressFault fault = TcpAddressFault::kNone;
  // Complete only without a fault; its host is set from the split on (for messages).
  TcpAddress address;
  std::string port_text;      // the port as written, for messages
  std::string resolve_error;  // a name that did not resolve (resolve_names): the resolver's answer
};

ParsedTcpAddress parse_tcp_address(std::string_view text, const TcpAddressRules& rules);

// "tcp://127.0.0.1:5000" / "tcp://[::1]:5000": brackets around a host that holds a ':'.
std::string format_tcp_url(std::string_view host, uint16_t port);

// Fills `address` from an IPv4 or IPv6 literal (IPv4 tried first); returns its length, or 0 when
// `host` is neither (it is then not a literal: no name lookup is made).
socklen_t ip_socket_address(const std::string& host, uint16_t port, sockaddr_storage* address);

// The first address the system resolver gives for `name` (IPv4 or IPv6) into `address`; its
// length, or 0 with the resolver's reason in `error`.
socklen_t resolve_host_name(const std::string& name, sockaddr_storage* address, std::string* error);
// The numeric text of an address ("10.0.0.7", "fe80::1").
std::string address_text(const sockaddr_storage& address);

// The port of an AF_INET or AF_INET6 address, and its replacement (port 0: any free port).
uint16_t socket_port(const sockaddr_storage& address);
void set_socket_port(sockaddr_storage* address, uint16_t port);

}  // namespace memloom::base
