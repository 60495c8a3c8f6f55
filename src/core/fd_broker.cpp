#include "src/core/fd_broker.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "src/base/log.h"
#include "src/base/unique_fd.h"

namespace memloom::core {
namespace {

using Clock = Deadline::Clock;

constexpr uint32_t kRequestMagic = 0x324c4644;  // "DFL2": the request carries a secret
constexpr int kAcceptBurst = 64;                // accepts per wake-up: the others get their turn
constexpr std::chrono::seconds kWarningInterval{10};
constexpr std::chrono::milliseconds kAcceptPause{100};

sockaddr_un abstract_address(const std::string& name, socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(address.sun_path))
    raise(Status::kInvalidInput, "fd broker name too long");
  address.sun_path[0] = '\0';  // abstract namespace: no file system entry
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

struct Request {
  uint32_t magic;
  uint32_t reserved;
  uint64_t id;
  FdSecret secret;
};
static_assert(sizeof(Request) == 32);

// The broker's answer on the wire: one status byte (1: published), with the descriptor beside it
// as SCM_RIGHTS when there is one. Not copyable: the message points into the object itself.
struct Reply {
  char status = 0;
  iovec io{&status, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};

  Reply() {
    message.msg_iov = &io;
    message.msg_iovlen = 1;
  }
  Reply(const Reply&) = delete;
  Reply& operator=(const Reply&) = delete;

  // Makes room for a descriptor: to receive one, or (with fd >= 0) to send it.
  void carry_descriptor(int fd = -1) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    if (fd < 0) return;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  }
};

// The uid of the process at the other end of a connected Unix socket, or -1.
int64_t peer_uid(int connection) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
  return credentials.uid;
}

// True when a warning is due (at most one per interval); counts the ones it suppresses.
bool warning_due(Clock::time_point* next, uint64_t* unreported) {
  const auto now = Clock::now();
  if (now < *next) {
    ++*unreported;
    return false;
  }
  *next = now + kWarningInterval;
  return true;
}

std::mutex g_instance_mutex;
std::unique_ptr<FdBroker>* g_instance = nullptr;
pid_t g_instance_pid = 0;

}  // namespace

struct FdBroker::Connection {
  base::UniqueFd fd;
  Deadline deadline;
  Request request{};
  size_t received = 0;
};

FdBroker& FdBroker::instance() {
  std::lock_guard<std::mutex> lock(g_instance_mutex);
  if (g_instance == nullptr) {
    g_instance = new std::unique_ptr<FdBroker>();  // intentionally leaked: outlives static dtors
  }
  if (!*g_instance || g_instance_pid != getpid()) {
    // In a forked child the parent's serving thread does not exist; start our own and drop the
    // inherited object without joining a thread that is not ours.
    // Its std::thread names a thread that does not exist here, so neither join nor detach is
    // possible: leak the object (its fds were inherited and stay harmless).
    if (*g_instance && g_instance_pid != getpid()) (void)g_instance->release();
    g_instance->reset(new FdBroker());
    g_instance_pid = getpid();
  }
  return **g_instance;
}

FdBroker::FdBroker() : uid_(::geteuid()) {
  uint32_t salt = 0;  // tells this process's socket from a dead one's of the same pid
  fill_random(&salt, sizeof(salt));
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%08x", salt);
  socket_name_ = "memloom-fd." + std::to_string(getpid()) + "." + suffix;
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) raise_errno("fd broker socket", errno);
  socklen_t length = 0;
  sockaddr_un address = abstract_address(socket_name_, &length);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    int error = errno;
    ::close(listen_fd_);
    raise_errno("fd broker bind " + socket_name_, error);
  }
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) raise_errno("fd broker pipe", errno);
  thread_ = std::thread([this] { serve(); });
}

FdBroker::~FdBroker() {
  if (wake_pipe_[1] >= 0) {
    char byte = 1;
    ssize_t written = ::write(wake_pipe_[1], &byte, 1);  // a failed wake-up only delays the join
    (void)written;
  }
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
  for (auto& entry : published_) ::close(entry.second.fd);
}

std::string FdBroker::publish(int fd) {
  FdToken token;
  token.socket = socket_name_;
  fill_random(token.secret.data(), token.secret.size());
  base::UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) raise_errno("fd broker dup", errno);
  std::lock_guard<std::mutex> lock(mutex_);
  // Random ids too, so that one publication's id says nothing about another's.
  do {
    fill_random(&token.id, sizeof(token.id));
  } while (published_.count(token.id) != 0);
  std::string text = token.format();
  if (text.size() > kMaxTokenLength) raise(Status::kLogic, "fd broker token too long: " + text);
  published_[token.id] = Publication{copy.release(), token.secret};
  return text;
}

void FdBroker::withdraw(const std::string& text) {
  const auto token = FdToken::parse(text);
  if (!token || token->socket != socket_name_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = published_.find(token->id);
  if (it != published_.end() && same_secret(it->second.secret, token->secret)) {
    ::close(it->second.fd);
    published_.erase(it);
  }
}

void FdBroker::serve() {
  std::vector<Connection> connections;
  connections.reserve(kMaxConnections);
  std::vector<pollfd> fds;
  while (true) {
    const auto now = Clock::now();
    const bool accepting = now >= accept_paused_until_;
    auto wake_at = accepting ? Clock::time_point::max() : accept_paused_until_;
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});  // poll skips a negative fd
    for (const auto& connection : connections) {
      fds.push_back({connection.fd.get(), POLLIN, 0});
      wake_at = std::min(wake_at, connection.deadline.time_point());
    }
    int timeout_ms = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now).count();
      timeout_ms = static_cast<int>(std::max<int64_t>(left, 0));
    }
    const int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MEMLOOM_LOG(kError, "fd broker poll failed: " << std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    // Each connection moves on its own: read what it sent, answer it once complete, or drop it at
    // its own deadline. None waits for another.
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& connection = connections[i];
      const bool keep =
          (fds[i + 2].revents == 0 || advance(connection)) && !connection.deadline.expired();
      if (!keep) connection.fd.reset();
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return !c.fd.valid(); }),
                      connections.end());
    if (fds[1].revents != 0) accept_pending(connections);
  }
}

void FdBroker::accept_pending(std::vector<Connection>& connections) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    base::UniqueFd fd(::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: the pending connection stays queued and would wake poll at
      // once, so stop accepting for a moment instead of spinning.
      MEMLOOM_LOG(kWarn, "fd broker accept failed: " << std::strerror(errno));
      accept_paused_until_ = Clock::now() + kAcceptPause;
      return;
    }
    if (!allowed(fd.get())) continue;  // closed at once: another user holds nothing here
    if (connections.size() >= static_cast<size_t>(kMaxConnections)) {
      if (warning_due(&next_overflow_warning_, &overflows_unreported_)) {
        MEMLOOM_LOG(kWarn, "fd broker " << socket_name_ << ": " << kMaxConnections
                                        << " connections open, closing new ones ("
                                        << overflows_unreported_ << " more since the last report)");
        overflows_unreported_ = 0;
      }
      continue;
    }
    Connection connection{std::move(fd), Deadline::after(kRequestTimeout)};
    // The request usually arrived with the connection: answer it now without another poll round.
    if (advance(connection)) connections.push_back(std::move(connection));
  }
}

// Only our own user may fetch descriptors. Root is refused too unless we are root ourselves: the
// rule stays "same account", and a root peer needs no broker to reach our memory anyway.
bool FdBroker::allowed(int connection) {
  const int64_t uid = peer_uid(connection);
  if (uid == static_cast<int64_t>(uid_)) return true;
  if (warning_due(&next_refusal_warning_, &refusals_unreported_)) {
    MEMLOOM_LOG(kWarn, "fd broker " << socket_name_ << " refused a connection from uid " << uid
                                    << " (only uid " << uid_ << " may fetch descriptors; "
                                    << refusals_unreported_ << " more since the last report)");
    refusals_unreported_ = 0;
  }
  return false;
}

// Reads what the connection has sent; false when it is finished (answered, closed or broken).
bool FdBroker::advance(Connection& connection) {
  auto* bytes = reinterpret_cast<char*>(&connection.request);
  while (connection.received < sizeof(Request)) {
    const ssize_t got = ::recv(connection.fd.get(), bytes + connection.received,
                               sizeof(Request) - connection.received, MSG_DONTWAIT);
    if (got > 0) {
      connection.received += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  answer(connection);
  return false;
}

// One request per connection. A wrong secret and an unknown id get the same answer, "not
// published", so the reply tells a guesser nothing.
void FdBroker::answer(const Connection& connection) {
  const Request& request = connection.request;
  if (request.magic != kRequestMagic) return;
  Reply reply;
  // The lock covers the send so that withdraw() cannot close the descriptor while it is in flight;
  // the send does not block (one byte on a fresh socket; MSG_DONTWAIT all the same).
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = published_.find(request.id);
  static const FdSecret kNoSecret{};
  const bool known = it != published_.end();
  // Compare even when the id is unknown, so both failures take the same time.
  const bool match = same_secret(known ? it->second.secret : kNoSecret, request.secret) && known;
  if (match) {
    reply.status = 1;
    reply.carry_descriptor(it->second.fd);
  }
  (void)::sendmsg(connection.fd.get(), &reply.message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int FdBroker::fetch(const std::string& text, Deadline deadline) {
  const auto token = FdToken::parse(text);
  if (!token) {
    // The text may hold a secret: show only the socket it names.
    raise(Status::kInvalidInput,
          "malformed fd token for '" + text.substr(0, text.rfind('#')) + "'");
  }
  const std::string name = token->redacted();
  base::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) raise_errno("fd broker socket", errno);
  socklen_t length = 0;
  sockaddr_un address = abstract_address(token->socket, &length);
  // A non-blocking connect to a Unix socket answers EAGAIN while the owner's backlog is full.
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    const int error = errno;
    if (error != EAGAIN && error != EINTR) {
      raise(Status::kCommunication,
            "cannot reach the process owning fd '" + name + "': " + std::strerror(error));
    }
    if (deadline.expired()) raise(Status::kTimeout, "timed out connecting for fd '" + name + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The secret goes only to a process of our own user, not to whoever took a dead owner's name.
  const int64_t owner = peer_uid(fd.get());
  if (owner != static_cast<int64_t>(::geteuid())) {
    raise(Status::kCommunication, "fd '" + name + "' is served by uid " + std::to_string(owner) +
                                      ", not ours (" + std::to_string(::geteuid()) + ")");
  }
  Request request{kRequestMagic, 0, token->id, token->secret};
  const char* bytes = reinterpret_cast<const char*>(&request);
  size_t sent = 0;
  while (sent < sizeof(request)) {
    if (!base::wait_ready(fd.get(), POLLOUT, deadline))
      raise(Status::kTimeout, "timed out requesting fd '" + name + "'");
    const ssize_t put = ::send(fd.get(), bytes + sent, sizeof(request) - sent, MSG_NOSIGNAL);
    if (put > 0) {
      sent += static_cast<size_t>(put);
    } else if (errno != EAGAIN && errno != EINTR) {
      raise(Status::kCommunication,
            "fd request for '" + name + "' failed: " + std::strerror(errno));
    }
  }
  Reply reply;
  reply.carry_descriptor();
  ssize_t got = -1;
  do {
    if (!base::wait_ready(fd.get(), POLLIN, deadline))
      raise(Status::kTimeout, "timed out fetching fd '" + name + "'");
    got = ::recvmsg(fd.get(), &reply.message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (got < 0 && (errno == EAGAIN || errno == EINTR));
  base::UniqueFd received;
  cmsghdr* header = CMSG_FIRSTHDR(&reply.message);
  if (got > 0 && header != nullptr && header->cmsg_level == SOL_SOCKET &&
      header->cmsg_type == SCM_RIGHTS && header->cmsg_len == CMSG_LEN(sizeof(int))) {
    int value = -1;
    std::memcpy(&value, CMSG_DATA(header), sizeof(int));
    received.reset(value);
  }
  if (got != 1) {
    raise(Status::kCommunication, "the process owning fd '" + name +
                                      "' closed the connection without an answer (it refuses "
                                      "other users, and connections beyond its cap)");
  }
  if (reply.status != 1)
    raise(Status::kNotFound, "fd '" + name + "' is not published by its owner");
  if (!received.valid() || (reply.message.msg_flags & MSG_CTRUNC) != 0)
    raise(Status::kCommunication, "fd broker reply for '" + name + "' without a descriptor");
  return received.release();
}

}  // namespace memloom::core
