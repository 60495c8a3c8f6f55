#include "src/store/url.h"

#include <cctype>

#include "memloom/error.h"

namespace memloom::store {
namespace {

// Port 0 is a server's "any free port" (the client refuses it itself); a fault of the host is named
// before one of the port.
constexpr base::TcpAddressRules kStoreUrl = {
    .name_unbracketed_ipv6 = true, .host_before_port = true, .min_port = 0, .resolve_names = true};

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
      if (!parsed.resolve_error.empty()) {
        return "the host name '" + parsed.address.host + "' does not resolve (" +
               parsed.resolve_error + ")";
      }
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

// A host name (RFC 1123 labels) or an IPv4 literal, which has the same characters.
bool is_host_name(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    if (++label > 63) return false;
  }
  return label > 0 && host.front() != '-' && host.back() != '-';
}

EtcdEndpoint parse_etcd_endpoint(const std::string& url, const std::string& text) {
  auto bad = [&](const std::string& why) {
    raise(Status::kInvalidInput, "invalid store URL '" + url + "': " + why +
                                     " (expected etcd://HOST:PORT[,HOST:PORT...])");
  };
  if (text.empty()) bad("an endpoint is empty");
  EtcdEndpoint endpoint;
  std::string port_text;
  if (text.front() == '[') {
    // The IPv6 literal itself is checked by the TCP address parser's rules.
    base::ParsedTcpAddress parsed = base::parse_tcp_address("tcp://" + text, kStoreUrl);
    if (parsed.fault != base::TcpAddressFault::kNone)
      bad("endpoint '" + text + "': " + why(parsed));
    endpoint.host = parsed.address.host;
    port_text = parsed.port_text;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) bad("endpoint '" + text + "' has no ':PORT'");
    endpoint.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (endpoint.host.find(':') != std::string::npos)
      bad("IPv6 addresses must be written in brackets");
    if (!is_host_name(endpoint.host)) bad("'" + endpoint.host + "' is not a host name or address");
  }
  unsigned long port = 0;
  bool digits = !port_text.empty() && port_text.size() <= 5 &&
                port_text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) port = std::stoul(port_text);
  if (!digits || port == 0 || port > 65535)
    bad("the port '" + port_text + "' of endpoint '" + text + "' is not a number in 1..65535");
  endpoint.port = static_cast<uint16_t>(port);
  return endpoint;
}

}  // namespace

std::string EtcdEndpoint::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string EtcdUrl::to_string() const {
  std::string out = kEtcdScheme;
  for (size_t i = 0; i < endpoints.size(); ++i) out += (i ? "," : "") + endpoints[i].to_string();
  return out;
}

bool is_etcd_url(const std::string& url) {
  return url.rfind(kEtcdScheme, 0) == 0;
}

EtcdUrl parse_etcd_url(const std::string& url) {
  if (!is_etcd_url(url)) {
    raise(Status::kInvalidInput, "invalid store URL '" + url + "': it does not start with etcd://");
  }
  EtcdUrl parsed;
  std::string rest = url.substr(std::string(kEtcdScheme).size());
  size_t start = 0;
  while (true) {
    size_t comma = rest.find(',', start);
    parsed.endpoints.push_back(parse_etcd_endpoint(url, rest.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parsed;
}

void check_client_store_url(const std::string& url) {
  if (is_etcd_url(url)) {
    parse_etcd_url(url);
    return;
  }
  TcpUrl parsed = parse_tcp_url(url);
  if (parsed.port == 0) {
    raise(Status::kInvalidInput, "invalid store URL '" + url + "': cannot connect to port 0");
  }
}

std::string TcpUrl::to_string() const {
  return format_tcp_url(host, port);
}

TcpUrl parse_tcp_url(const std::string& url) {
  base::ParsedTcpAddress parsed = base::parse_tcp_address(url, kStoreUrl);
  if (parsed.fault != base::TcpAddressFault::kNone) {
    raise(Status::kInvalidInput,
          "invalid store URL '" + url + "': " + why(parsed) +
              " (expected tcp://HOST:PORT, tcp://IPv4:PORT or tcp://[IPv6]:PORT)");
  }
  return TcpUrl{parsed.address.host, parsed.address.port, parsed.address.ipv6()};
}

}  // namespace memloom::store
