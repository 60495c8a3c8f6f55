#include "src/smem/trans/endpoint_address.h"

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/base/tcp_address.h"

namespace memloom::smem::trans {
namespace {

// "host:port" without a scheme; a port of at most five digits, checked before the host.
constexpr base::TcpAddressRules kUniqueId = {.scheme = false,
                                             .name_unbracketed_ipv6 = true,
                                             .port_syntax = base::PortSyntax::kUpToFiveDigits};

std::string why(const base::ParsedTcpAddress& parsed) {
  using Fault = base::TcpAddressFault;
  switch (parsed.fault) {
    case Fault::kUnclosedBracket:
      return "missing ']'";
    case Fault::kNoColonAfterBracket:
      return "missing ':port' after ']'";
    case Fault::kNoScheme:  // not checked: a uniqueId has no scheme
    case Fault::kNoPort:
      return "missing ':port'";
    case Fault::kUnbracketedIpv6:
      return "IPv6 addresses need brackets";
    case Fault::kEmptyPort:
    case Fault::kBadPort:
      return "bad port '" + parsed.port_text + "'";
    case Fault::kPortOutOfRange:
      return "port must be 1..65535";
    case Fault::kEmptyHost:
    case Fault::kNotIpv4:
      return "'" + parsed.address.host + "' is not an IPv4 address";
    case Fault::kNotIpv6:
      return "'" + parsed.address.host + "' is not an IPv6 address";
    case Fault::kNone:
      break;
  }
  return "";
}

}  // namespace

EndpointAddress EndpointAddress::parse(const std::string& unique_id) {
  const base::ParsedTcpAddress parsed = base::parse_tcp_address(unique_id, kUniqueId);
  if (parsed.fault != base::TcpAddressFault::kNone) {
    raise(Status::kInvalidInput,
          "uniqueId '" + unique_id + "' is not 'IPv4:port' or '[IPv6]:port': " + why(parsed));
  }
  return EndpointAddress{parsed.address.storage, parsed.address.length, unique_id,
                         parsed.address.host};
}

base::UniqueFd hold_address(const EndpointAddress& address) {
  base::UniqueFd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) raise_errno("socket", errno);
  int one = 1;
  if (address.family() == AF_INET6)
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(fd.get(), address.address(), address.length) != 0) {
    const int error = errno;
    if (error == EADDRINUSE) {
      raise(Status::kInvalidValue, "cannot take the name " + address.text +
                                       ": the address is in use (is another instance named '" +
                                       address.text + "' running?)");
    }
    if (error == EADDRNOTAVAIL) {
      raise(Status::kInvalidInput,
            "cannot take the name " + address.text + ": not an address of this host");
    }
    raise(Status::kSystem, "cannot take the name " + address.text + ": " + std::strerror(error));
  }
  return fd;
}

}  // namespace memloom::smem::trans
