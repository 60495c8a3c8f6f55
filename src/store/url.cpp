#include "src/store/url.h"

#include "memloom/error.h"

namespace memloom::store {
namespace {

// Port 0 is a server's "any free port" (the client refuses it itself); a fault of the host is named
// before one of the port.
constexpr base::TcpAddressRules kStoreUrl = {
    .name_unbracketed_ipv6 = true, .host_before_port = true, .min_port = 0};

std::string why(const base::ParsedTcpAddress& parsed) {
  using Fault = base::TcpAddressFault;
  switch (parsed.fault) {
    case Fault::kNoScheme:
      return "it does not start with tcp://";
    case Fault::kUnclosedBracket:
      return "the '[' of the IPv6 address is not closed";
    case Fault::kNoColonAfterBracket:
      return "a ':PORT' must follow the ']'";
    case Fault::kNoPort:
    case Fault::kEmptyPort:
      return "the port is missing";
    case Fault::kUnbracketedIpv6:
      return "IPv6 addresses must be written in brackets";
    case Fault::kEmptyHost:
      return "the host is missing";
    case Fault::kNotIpv4:
      return "'" + parsed.address.host + "' is not an IPv4 address";
    case Fault::kNotIpv6:
      return "'" + parsed.address.host + "' is not an IPv6 address";
    case Fault::kBadPort:
    case Fault::kPortOutOfRange:
      return "the port '" + parsed.port_text + "' is not a number in 0..65535";
    case Fault::kNone:
      break;
  }
  return "";
}

}  // namespace

std::string TcpUrl::to_string() const {
  return format_tcp_url(host, port);
}

TcpUrl parse_tcp_url(const std::string& url) {
  base::ParsedTcpAddress parsed = base::parse_tcp_address(url, kStoreUrl);
  if (parsed.fault != base::TcpAddressFault::kNone) {
    raise(Status::kInvalidInput, "invalid store URL '" + url + "': " + why(parsed) +
                                     " (expected tcp://IPv4:PORT or tcp://[IPv6]:PORT)");
  }
  return TcpUrl{parsed.address.host, parsed.address.port, parsed.address.ipv6()};
}

}  // namespace memloom::store
