#include "hw/emulated/tcp_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"

namespace memloom::emulated::wire {

Endpoint parse_tcp_url(const std::string& url) {
  const std::string scheme = "tcp://";
  auto bad = [&](const std::string& why) -> Endpoint {
    raise(Status::kInvalidInput, "transport address '" + url + "' " + why +
                                     " (expected tcp://IP:PORT or tcp://[IPv6]:PORT)");
  };
  if (url.compare(0, scheme.size(), scheme) != 0) return bad("has no tcp:// scheme");
  std::string rest = url.substr(scheme.size());
  auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("has no port");
  std::string host = rest.substr(0, colon);
  std::string port_text = rest.substr(colon + 1);
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port <= 0 || port > 65535) return bad("has an invalid port");
  Endpoint endpoint;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&endpoint.address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6->sin6_addr) != 1) {
      return bad("has an invalid IPv6 address");
    }
    endpoint.length = sizeof(sockaddr_in6);
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&endpoint.address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1) {
      return bad("has an invalid IPv4 address");
    }
    endpoint.length = sizeof(sockaddr_in);
  }
  return endpoint;
}

bool wait_ready(int fd, short events, Deadline deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms(1000));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
    if (deadline.expired()) return false;
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

}  // namespace memloom::emulated::wire
