#include "src/smem/trans/socket_io.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::smem::trans {
namespace {

constexpr size_t kMaxIovPerCall = IOV_MAX < 1024 ? IOV_MAX : 1024;

[[noreturn]] void connection_failed(const char* what, int error) {
  raise(Status::kCommunication,
        std::string(what) + " failed: " + std::strerror(error) + " (the peer may have exited)");
}

constexpr size_t kCongestionNameBytes = 16;  // the kernel's TCP_CA_NAME_MAX

struct CongestionChoice {
  bool keep_default = false;
  std::vector<std::string> preferred;  // tried in order
  bool only_replace_pacing = true;     // change only a connection that starts with bbr*
};

CongestionChoice congestion_choice() {
  CongestionChoice choice;
  const char* named = std::getenv("MEMLOOM_TRANS_TCP_CONGESTION");
  if (named == nullptr || *named == '\0') {
    choice.preferred = {"cubic", "reno"};
  } else if (std::string(named) == "default") {
    choice.keep_default = true;
  } else {
    choice.preferred = {named};
    choice.only_replace_pacing = false;
  }
  return choice;
}

void choose_congestion_control(int fd) {
  static const CongestionChoice choice = congestion_choice();
  if (choice.keep_default) return;
  if (choice.only_replace_pacing) {
    char current[kCongestionNameBytes] = {};
    socklen_t length = sizeof(current);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, current, &length) != 0) return;
    if (std::strncmp(current, "bbr", 3) != 0) return;
  }
  for (const std::string& name : choice.preferred) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0) {
      return;
    }
  }
  // Not available or not permitted: the system's algorithm still moves the bytes, only slower.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    MEMLOOM_LOG(kWarn, "TRANS data connections keep the system's TCP congestion control: "
                           << choice.preferred.front() << " is not available ("
                           << std::strerror(errno) << ")");
  }
}

// What differs between sending and receiving on the data path.
struct Direction {
  bool send;
  short events;           // what to wait for when the socket has no room or no data
  const char* call;       // for connection_failed
  const char* buffer;     // whose memory a bad address is in
  const char* timed_out;  // the message at the deadline
};

constexpr Direction kSend{true, POLLOUT, "send", "source", "timed out sending to a peer"};
constexpr Direction kReceive{false, POLLIN, "receive", "destination",
                             "timed out receiving from a peer"};

// One non-blocking sendmsg/recvmsg over the cursor (send_some/recv_some).
size_t move_some(int fd, IovCursor& cursor, const Direction& direction) {
  if (cursor.done()) return 0;
  msghdr message{};
  size_t count = 0;
  message.msg_iov = cursor.next(&count);
  message.msg_iovlen = count;
  ssize_t moved = direction.send ? ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL)
                                 : ::recvmsg(fd, &message, MSG_DONTWAIT);
  if (moved < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    if (errno == EFAULT) {
      raise(Status::kInvalidInput,
            std::string("a ") + direction.buffer + " buffer of the transfer is not mapped");
    }
    connection_failed(direction.call, errno);
  }
  if (moved == 0 && !direction.send) {
    raise(Status::kCommunication, "the peer closed the connection (it may have exited)");
  }
  cursor.advance(static_cast<size_t>(moved));
  return static_cast<size_t>(moved);
}

// Moves all of the cursor's bytes, waiting while the socket is not ready (send/recv_exact).
bool move_exact(int fd, IovCursor cursor, const Direction& direction, Deadline deadline,
                int stop_fd) {
  while (!cursor.done()) {
    if (move_some(fd, cursor, direction) > 0) continue;
    WaitResult waited = wait_for(fd, direction.events, deadline, stop_fd);
    if (waited == WaitResult::kStopped) return false;
    if (waited == WaitResult::kTimeout) raise(Status::kTimeout, direction.timed_out);
  }
  return true;
}

}  // namespace

void tune_data_socket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  choose_congestion_control(fd);
}

UniqueFd listen_on(const EndpointAddress& address) {
  UniqueFd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) raise_errno("socket", errno);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.family() == AF_INET6)
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(fd.get(), address.address(), address.length) != 0) {
    int error = errno;
    if (error == EADDRINUSE) {
      raise(Status::kInvalidValue, "cannot listen on " + address.text +
                                       ": the address is in use (is another instance named '" +
                                       address.text + "' running?)");
    }
    if (error == EADDRNOTAVAIL) {
      raise(Status::kInvalidInput,
            "cannot listen on " + address.text + ": not an address of this host");
    }
    raise(Status::kSystem, "cannot listen on " + address.text + ": " + std::strerror(error));
  }
  if (::listen(fd.get(), 512) != 0) raise_errno("listen on " + address.text, errno);
  return fd;
}

UniqueFd connect_to(const EndpointAddress& address, Deadline deadline) {
  UniqueFd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) raise_errno("socket", errno);
  tune_data_socket(fd.get());
  if (::connect(fd.get(), address.address(), address.length) != 0) {
    if (errno != EINPROGRESS) {
      raise(Status::kCommunication,
            "cannot connect to " + address.text + ": " + std::strerror(errno));
    }
    if (wait_for(fd.get(), POLLOUT, deadline) != WaitResult::kReady) {
      raise(Status::kTimeout, "timed out connecting to " + address.text);
    }
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      raise(Status::kCommunication,
            "cannot connect to " + address.text + ": " + std::strerror(error));
    }
  }
  return fd;
}

bool send_exact(int fd, const void* data, size_t bytes, Deadline deadline, int stop_fd) {
  return move_exact(fd, IovCursor({iovec{const_cast<void*>(data), bytes}}), kSend, deadline,
                    stop_fd);
}

bool recv_exact(int fd, void* data, size_t bytes, Deadline deadline, int stop_fd) {
  return move_exact(fd, IovCursor({iovec{data, bytes}}), kReceive, deadline, stop_fd);
}

IovCursor::IovCursor(std::vector<iovec> iovs) : iovs_(std::move(iovs)) {
  for (const auto& io : iovs_) remaining_ += io.iov_len;
  while (index_ < iovs_.size() && iovs_[index_].iov_len == 0) ++index_;
}

iovec* IovCursor::next(size_t* count) {
  *count = std::min(kMaxIovPerCall, iovs_.size() - index_);
  return iovs_.data() + index_;
}

void IovCursor::advance(size_t bytes) {
  remaining_ -= bytes;
  while (bytes > 0) {
    iovec& current = iovs_[index_];
    size_t step = std::min(bytes, current.iov_len);
    current.iov_base = static_cast<char*>(current.iov_base) + step;
    current.iov_len -= step;
    bytes -= step;
    if (current.iov_len == 0) ++index_;
  }
  while (index_ < iovs_.size() && iovs_[index_].iov_len == 0) ++index_;
}

size_t send_some(int fd, IovCursor& cursor) {
  return move_some(fd, cursor, kSend);
}

size_t recv_some(int fd, IovCursor& cursor) {
  return move_some(fd, cursor, kReceive);
}

}  // namespace memloom::smem::trans
