#include "tests/fd_broker/fd_broker_test_support.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <exception>
#include <thread>

namespace memloom::testing {

base::UniqueFd make_payload_fd() {
  base::UniqueFd fd(::memfd_create("memloom-fd-test", MFD_CLOEXEC));
  if (fd.valid() && ::write(fd.get(), kPayload, sizeof(kPayload)) != sizeof(kPayload)) fd.reset();
  return fd;
}

bool holds_payload(int fd) {
  char buffer[sizeof(kPayload)] = {};
  return ::pread(fd, buffer, sizeof(buffer), 0) == sizeof(buffer) &&
         std::memcmp(buffer, kPayload, sizeof(buffer)) == 0;
}

TokenParts split_token(const std::string& token) {
  TokenParts parts;
  const auto hash = token.rfind('#');
  if (hash == std::string::npos) return parts;
  const auto dot = token.find('.', hash);
  if (dot == std::string::npos) return parts;
  parts.socket = token.substr(0, hash);
  parts.id = token.substr(hash + 1, dot - hash - 1);
  parts.secret = token.substr(dot + 1);
  parts.ok = !parts.socket.empty() && !parts.id.empty() && parts.secret.size() >= 32;
  return parts;
}

base::UniqueFd connect_raw(const std::string& socket, std::chrono::milliseconds timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.size() + 1 > sizeof(address.sun_path)) return {};
  std::memcpy(address.sun_path + 1, socket.data(), socket.size());  // abstract name
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + socket.size());
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return {};
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) == 0) return fd;
    // A full backlog answers EAGAIN on a non-blocking Unix socket: the broker has not accepted yet.
    if (errno != EAGAIN || std::chrono::steady_clock::now() >= end) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool closed_within(int fd, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    char byte = 0;
    const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd entry{fd, POLLIN, 0};
    (void)::poll(&entry, 1, static_cast<int>(left.count()));
  }
}

}  // namespace memloom::testing
