#include "hw/host/tcp_wire.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "src/base/tcp_address.h"

namespace memloom::host::wire {
namespace {

// The transport's own reading: the port after the last ':', checked before the host; brackets
// mean IPv6.
constexpr base::TcpAddressRules kTransportUrl = {.split_at_last_colon = true,
                                                 .port_syntax = base::PortSyntax::kStrtol};

const char* why(base::TcpAddressFault fault) {
  using Fault = base::TcpAddressFault;
  switch (fault) {
    case Fault::kNoScheme:
      return "has no tcp:// scheme";
    case Fault::kNoPort:
      return "has no port";
    case Fault::kEmptyPort:
    case Fault::kBadPort:
    case Fault::kPortOutOfRange:
      return "has an invalid port";
    case Fault::kNotIpv6:
      return "has an invalid IPv6 address";
    // kTransportUrl reports none of the first four: with its split at the last ':', any other
    // fault of the host is that of an IPv4 literal.
    case Fault::kUnclosedBracket:
    case Fault::kNoColonAfterBracket:
    case Fault::kUnbracketedIpv6:
    case Fault::kEmptyHost:
    case Fault::kNotIpv4:
      return "has an invalid IPv4 address";
    case Fault::kNone:
      break;
  }
  return "";
}

}  // namespace

Endpoint parse_tcp_url(const std::string& url) {
  base::ParsedTcpAddress parsed = base::parse_tcp_address(url, kTransportUrl);
  if (parsed.fault != base::TcpAddressFault::kNone) {
    raise(Status::kInvalidInput, "transport address '" + url + "' " + why(parsed.fault) +
                                     " (expected tcp://IP:PORT or tcp://[IPv6]:PORT)");
  }
  return Endpoint{parsed.address.storage, parsed.address.length};
}

bool wait_ready(int fd, short events, Deadline deadline) {
  // The wire's callers take false as a failed connection and must not throw (the server's
  // thread), so a failing poll() answers false as a deadline does. An interruption (only on a
  // caller's thread: the server's threads install no check) still ends the caller's call.
  try {
    return base::wait_ready(fd, events, deadline);
  } catch (const Error& error) {
    if (error.status() == Status::kInterrupted) throw;
    return false;
  }
}

bool read_exact(int fd, void* data, size_t bytes, Deadline deadline, std::string* error) {
  auto* out = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, out, bytes, 0);
    if (n > 0) {
      out += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      if (error) *error = "connection closed by the peer";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (error) *error = std::strerror(errno);
      return false;
    }
    if (!wait_ready(fd, POLLIN, deadline)) {
      if (error) *error = "timed out";
      return false;
    }
  }
  return true;
}

bool write_exact(int fd, const void* data, size_t bytes, Deadline deadline, std::string* error) {
  auto* in = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, in, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      in += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (error) *error = std::strerror(errno);
      return false;
    }
    if (!wait_ready(fd, POLLOUT, deadline)) {
      if (error) *error = "timed out";
      return false;
    }
  }
  return true;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    raise_errno("making a transport socket non-blocking", errno);
  }
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace memloom::host::wire
