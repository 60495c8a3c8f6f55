#include "hw/cuda/tcp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"

namespace memloom::cuda {
namespace {

// Fills `address` from an IP literal; returns its length.
socklen_t make_address(const std::string& host, uint16_t port, sockaddr_storage* address) {
  std::memset(address, 0, sizeof(*address));
  auto* v4 = reinterpret_cast<sockaddr_in*>(address);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return sizeof(sockaddr_in);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(address);
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof(sockaddr_in6);
  }
  raise(Status::kInvalidInput, "'" + host + "' is not an IPv4 or IPv6 address");
}

// Waits for `events`; false at the deadline.
bool wait_for(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms(100));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) raise_errno("poll", errno);
    if (deadline.expired()) return false;
  }
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
  const std::string scheme = "tcp://";
  if (url.compare(0, scheme.size(), scheme) != 0) {
    raise(Status::kInvalidInput, "transport address '" + url + "' does not start with tcp://");
  }
  std::string rest = url.substr(scheme.size());
  TcpEndpoint endpoint;
  size_t colon;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      raise(Status::kInvalidInput, "transport address '" + url + "' is malformed");
    }
    endpoint.host = rest.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = rest.rfind(':');
    if (colon == std::string::npos) {
      raise(Status::kInvalidInput, "transport address '" + url + "' has no port");
    }
    endpoint.host = rest.substr(0, colon);
  }
  const std::string port = rest.substr(colon + 1);
  char* end = nullptr;
  unsigned long value = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || value == 0 || value > 65535) {
    raise(Status::kInvalidInput, "transport address '" + url + "' has a bad port");
  }
  endpoint.port = static_cast<uint16_t>(value);
  sockaddr_storage check{};
  make_address(endpoint.host, endpoint.port, &check);
  return endpoint;
}

std::string TcpEndpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
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
  *port =
      ntohs(address.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&address)->sin_port
                                         : reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
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
  if (!wait_for(fd, POLLOUT, deadline)) {
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
      if (!wait_for(fd, POLLOUT, deadline)) raise(Status::kTimeout, "sending: deadline passed");
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
      if (!wait_for(fd, POLLIN, deadline)) raise(Status::kTimeout, "receiving: deadline passed");
      continue;
    }
    raise(Status::kCommunication,
          std::string("receiving from the peer failed: ") + std::strerror(errno));
  }
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace memloom::cuda
