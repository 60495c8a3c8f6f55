#include "hw/cuda/tcp_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "src/base/tcp_address.h"

namespace memloom::cuda {
namespace {

[[noreturn]] void not_an_ip_literal(const std::string& host) {
  raise(Status::kInvalidInput, "'" + host + "' is not an IPv4 or IPv6 address");
}

// Fills `address` from an IP literal; returns its length.
socklen_t make_address(const std::string& host, uint16_t port, sockaddr_storage* address) {
  socklen_t length = base::ip_socket_address(host, port, address);
  if (length == 0) not_an_ip_literal(host);
  return length;
}

// An IP literal of either family, in brackets or not; the port is checked before the host.
constexpr base::TcpAddressRules kTransportUrl = {.either_family = true,
                                                 .port_syntax = base::PortSyntax::kStrtol};

// What is wrong with a transport address; nullptr when it is the host (named on its own).
const char* why(base::TcpAddressFault fault) {
  using Fault = base::TcpAddressFault;
  switch (fault) {
    case Fault::kNoScheme:
      return "does not start with tcp://";
    case Fault::kUnclosedBracket:
    case Fault::kNoColonAfterBracket:
      return "is malformed";
    case Fault::kNoPort:
      return "has no port";
    case Fault::kEmptyPort:
    case Fault::kBadPort:
    case Fault::kPortOutOfRange:
      return "has a bad port";
    case Fault::kNone:
    case Fault::kUnbracketedIpv6:
    case Fault::kEmptyHost:
    case Fault::kNotIpv4:
    case Fault::kNotIpv6:
      break;
  }
  return nullptr;
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int buffer = 4 << 20;  // large transfers stream better with big socket buffers
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
}

}  // namespace

TcpEndpoint TcpEndpoint::parse(const std::string& url) {
  const base::ParsedTcpAddress parsed = base::parse_tcp_address(url, kTransportUrl);
  if (parsed.fault == base::TcpAddressFault::kNone) {
    return TcpEndpoint{parsed.address.host, parsed.address.port};
  }
  if (const char* fault = why(parsed.fault)) {
    raise(Status::kInvalidInput, "transport address '" + url + "' " + fault);
  }
  not_an_ip_literal(parsed.address.host);
}

std::string TcpEndpoint::url() const {
  return base::format_tcp_url(host, port);
}

int listen_tcp(const std::string& host, uint16_t* port) {
  sockaddr_storage address{};
  socklen_t length = make_address(host, 0, &address);
  int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) raise_errno("transport socket", errno);
  Socket owned(fd);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    raise_errno("binding the transport to " + host, errno);
  }
  if (::listen(fd, 64) != 0) raise_errno("listen", errno);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    raise_errno("getsockname", errno);
  }
  *port = base::socket_port(address);
  return owned.release();
}

int connect_tcp(const TcpEndpoint& endpoint, Deadline deadline) {
  sockaddr_storage address{};
  socklen_t length = make_address(endpoint.host, endpoint.port, &address);
  int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) raise_errno("transport socket", errno);
  Socket owned(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 && errno != EINPROGRESS) {
    raise(Status::kCommunication, "connecting to " + endpoint.url() + ": " + std::strerror(errno));
  }
  if (!base::wait_ready(fd, POLLOUT, deadline)) {
    raise(Status::kTimeout, "connecting to " + endpoint.url() + ": deadline passed");
  }
  int error = 0;
  socklen_t size = sizeof(error);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
  if (error != 0) {
    raise(Status::kCommunication, "connecting to " + endpoint.url() + ": " + std::strerror(error));
  }
  tune(fd);
  return owned.release();
}

void send_all(int fd, const void* data, size_t bytes, Deadline deadline) {
  const auto* next = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t sent = ::send(fd, next, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      next += sent;
      bytes -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!base::wait_ready(fd, POLLOUT, deadline))
        raise(Status::kTimeout, "sending: deadline passed");
      continue;
    }
    raise(Status::kCommunication,
          std::string("sending to the peer failed: ") + std::strerror(sent < 0 ? errno : EPIPE));
  }
}

void recv_all(int fd, void* data, size_t bytes, Deadline deadline) {
  auto* next = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t got = ::recv(fd, next, bytes, MSG_DONTWAIT);
    if (got > 0) {
      next += got;
      bytes -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) raise(Status::kCommunication, "the peer closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!base::wait_ready(fd, POLLIN, deadline))
        raise(Status::kTimeout, "receiving: deadline passed");
      continue;
    }
    raise(Status::kCommunication,
          std::string("receiving from the peer failed: ") + std::strerror(errno));
  }
}

void Socket::shutdown() {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace memloom::cuda
