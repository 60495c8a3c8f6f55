#include "src/core/fd_broker.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <random>

#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "src/base/log.h"

namespace memloom::core {
namespace {

constexpr uint32_t kRequestMagic = 0x4d4c4644;  // "MLFD"

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
};

std::mutex g_instance_mutex;
std::unique_ptr<FdBroker>* g_instance = nullptr;
pid_t g_instance_pid = 0;

}  // namespace

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

FdBroker::FdBroker() {
  std::random_device random;
  socket_name_ = "memloom-fd." + std::to_string(getpid()) + "." + std::to_string(random());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  for (auto& entry : published_) ::close(entry.second);
}

std::string FdBroker::publish(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) raise_errno("fd broker dup", errno);
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t id = next_id_++;
  published_[id] = copy;
  return socket_name_ + "#" + std::to_string(id);
}

void FdBroker::withdraw(const std::string& token) {
  auto hash = token.rfind('#');
  if (hash == std::string::npos || token.compare(0, hash, socket_name_) != 0) return;
  uint64_t id = std::stoull(token.substr(hash + 1));
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = published_.find(id);
  if (it != published_.end()) {
    ::close(it->second);
    published_.erase(it);
  }
}

void FdBroker::serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc = ::poll(fds, 2, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MEMLOOM_LOG(kError, "fd broker poll failed: " << std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      answer(connection);
      ::close(connection);
    }
  }
}

// One request per connection; a slow or broken client only costs its own short timeout.
void FdBroker::answer(int connection) {
  Request request{};
  if (!base::wait_ready(connection, POLLIN, Deadline::after(std::chrono::milliseconds(2000))))
    return;
  if (::recv(connection, &request, sizeof(request), MSG_WAITALL) != sizeof(request)) return;
  if (request.magic != kRequestMagic) return;
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = published_.find(request.id);
    if (it != published_.end()) fd = it->second;
  }
  char status = fd >= 0 ? 1 : 0;
  iovec io{&status, 1};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  }
  (void)::sendmsg(connection, &message, MSG_NOSIGNAL);
}

int FdBroker::fetch(const std::string& token, Deadline deadline) {
  auto hash = token.rfind('#');
  if (hash == std::string::npos || hash == 0)
    raise(Status::kInvalidInput, "malformed fd token '" + token + "'");
  std::string name = token.substr(0, hash);
  Request request{kRequestMagic, 0, 0};
  try {
    request.id = std::stoull(token.substr(hash + 1));
  } catch (const std::exception&) {
    raise(Status::kInvalidInput, "malformed fd token '" + token + "'");
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) raise_errno("fd broker socket", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  socklen_t length = 0;
  sockaddr_un address = abstract_address(name, &length);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    raise(Status::kCommunication,
          "cannot reach the process owning '" + token + "': " + std::strerror(errno));
  }
  if (::send(fd, &request, sizeof(request), MSG_NOSIGNAL) != sizeof(request)) {
    raise(Status::kCommunication, "fd request to '" + name + "' failed");
  }
  if (!base::wait_ready(fd, POLLIN, deadline))
    raise(Status::kTimeout, "timed out fetching fd '" + token + "'");
  char status = 0;
  iovec io{&status, 1};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t got = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  if (got != 1)
    raise(Status::kCommunication, "the process owning '" + token + "' closed the connection");
  if (status != 1) raise(Status::kNotFound, "fd '" + token + "' is no longer published");
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  if (header == nullptr || header->cmsg_type != SCM_RIGHTS) {
    raise(Status::kCommunication, "fd broker reply without a descriptor");
  }
  int received = -1;
  std::memcpy(&received, CMSG_DATA(header), sizeof(int));
  return received;
}

}  // namespace memloom::core
