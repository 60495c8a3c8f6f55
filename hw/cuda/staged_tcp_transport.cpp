#include "hw/cuda/staged_tcp_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "hw/host/host_address.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

constexpr uint32_t kMagic = 0x4d4c5458;  // "MLTX"
constexpr uint32_t kRead = 1, kWrite = 2;
// How long the serving side waits for a client in the middle of an op before dropping it.
constexpr auto kServerIoTimeout = std::chrono::seconds(120);
// How long a closing transport lets its serving threads finish the requests they are in.
constexpr auto kShutdownGrace = std::chrono::seconds(2);
constexpr size_t kMaxMessage = 1024;

struct RequestHeader {
  uint32_t magic;
  uint32_t op;
  uint64_t address;
  uint64_t bytes;
};

struct ResponseHeader {
  uint32_t magic;
  int32_t status;  // a Status value; 0 = done
  uint64_t bytes;  // payload that follows (reads)
  uint32_t message_length;
  uint32_t reserved;
};

using base::hex;

}  // namespace

struct StagedTcpTransport::Connection {
  explicit Connection(int fd, int device) : socket(fd), outgoing(device), incoming(device) {}
  Socket socket;
  std::mutex mutex;       // one transfer at a time per connection
  SocketStager outgoing;  // payloads of writes
  SocketStager incoming;  // payloads of reads
};

StagedTcpTransport::StagedTcpTransport(int device) : device_(device) {
  const std::string host = host::host_address();
  uint16_t port = 0;
  listener_ = Socket(listen_tcp(host, &port));
  address_ = TcpEndpoint{host, port}.url();
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) raise_errno("transport wake pipe", errno);
  acceptor_ = std::thread([this] { accept_loop(); });
}

StagedTcpTransport::~StagedTcpTransport() {
  stopping_ = true;
  // A full pipe already wakes the acceptor, so the result does not matter.
  [[maybe_unused]] ssize_t woken = ::write(wake_pipe_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  // A request in flight gets its answer: a peer whose write already landed here must not see the
  // connection cut, or it reports a failed write that happened (a rank that saw the write and
  // exited at once did that to its writer). Serving threads notice stopping_ within one poll
  // interval once their request is done; only those still busy after the grace (a peer stalled in
  // the middle of a request) are cut.
  const auto grace_end = std::chrono::steady_clock::now() + kShutdownGrace;
  auto all_finished = [this] {
    for (const Served& served : served_) {
      if (!served.finished) return false;
    }
    return true;
  };
  while (!all_finished() && std::chrono::steady_clock::now() < grace_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard<std::mutex> lock(served_mutex_);
    for (Served& served : served_) served.socket.shutdown();
  }
  for (Served& served : served_) {
    if (served.thread.joinable()) served.thread.join();
  }
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void StagedTcpTransport::expose(void* address, size_t size) {
  MEMLOOM_CHECK_ARG(address != nullptr && size > 0, "expose needs a non-null address and a size");
  const auto start = reinterpret_cast<uintptr_t>(address);
  std::lock_guard<std::mutex> lock(exposed_mutex_);
  if (const auto* clash = exposed_.insert(start, size)) {
    if (clash->is(start, size)) return;  // exposing the same range again is harmless
    raise(Status::kInvalidInput, "expose: [" + hex(start) + ", +" + std::to_string(size) +
                                     ") overlaps a range exposed before");
  }
}

void StagedTcpTransport::withdraw(void* address) {
  std::lock_guard<std::mutex> lock(exposed_mutex_);
  if (!exposed_.erase(reinterpret_cast<uintptr_t>(address))) {
    raise(Status::kInvalidInput,
          "withdraw: nothing was exposed at " + hex(reinterpret_cast<uintptr_t>(address)));
  }
}

bool StagedTcpTransport::is_exposed(uint64_t address, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(exposed_mutex_);
  return exposed_.find_containing(address, bytes) != nullptr;
}

void StagedTcpTransport::accept_loop() {
  while (!stopping_) {
    pollfd fds[2] = {{listener_.fd(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      MEMLOOM_LOG(kError, "transport: poll on the listener failed: " << std::strerror(errno));
      return;
    }
    if (stopping_ || (fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(served_mutex_);
    // Reap connections whose client went away.
    for (auto it = served_.begin(); it != served_.end();) {
      if (it->finished) {
        it->thread.join();
        it = served_.erase(it);
      } else {
        ++it;
      }
    }
    Served& served = served_.emplace_back();
    served.socket = Socket(fd);
    served.thread = std::thread([this, &served] { serve(served); });
  }
}

void StagedTcpTransport::serve(Served& served) {
  const int fd = served.socket.fd();
  SocketStager stager(device_);
  try {
    while (!stopping_) {
      RequestHeader request{};
      // Idle connections wait without a deadline; shutdown() wakes them when the transport goes.
      pollfd readable{fd, POLLIN, 0};
      if (::poll(&readable, 1, 200) <= 0) continue;
      recv_all(fd, &request, sizeof(request), Deadline::after(kServerIoTimeout));
      if (request.magic != kMagic || (request.op != kRead && request.op != kWrite)) {
        MEMLOOM_LOG(kWarn, "transport: dropping a connection that spoke another protocol");
        break;
      }
      const Deadline deadline = Deadline::after(kServerIoTimeout);
      const bool allowed = is_exposed(request.address, request.bytes);
      std::string message;
      if (!allowed) {
        message = std::string(request.op == kRead ? "read of" : "write to") + " [" +
                  hex(request.address) + ", +" + std::to_string(request.bytes) +
                  ") refused: the range is not exposed by " + address_;
      }
      void* local = reinterpret_cast<void*>(static_cast<uintptr_t>(request.address));
      if (request.op == kWrite) {
        if (allowed) {
          stager.receive_into(fd, local, request.bytes, deadline);
        } else {
          stager.discard(fd, request.bytes, deadline);
        }
      }
      message.resize(std::min(message.size(), kMaxMessage));
      ResponseHeader response{kMagic, allowed ? 0 : static_cast<int32_t>(Status::kInvalidInput),
                              allowed && request.op == kRead ? request.bytes : 0,
                              static_cast<uint32_t>(message.size()), 0};
      send_all(fd, &response, sizeof(response), deadline);
      send_all(fd, message.data(), message.size(), deadline);
      if (allowed && request.op == kRead) stager.send_from(fd, local, request.bytes, deadline);
    }
  } catch (const Error& error) {
    if (!stopping_ && error.status() != Status::kCommunication) {
      MEMLOOM_LOG(kWarn, "transport: serving a peer failed: " << error.what());
    }
  }
  served.finished = true;
}

std::shared_ptr<StagedTcpTransport::Connection> StagedTcpTransport::connection_to(
    const std::string& peer, Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(connections_mutex_);
    auto it = connections_.find(peer);
    if (it != connections_.end()) return it->second;
  }
  const TcpEndpoint endpoint = TcpEndpoint::parse(peer);
  auto connection = std::make_shared<Connection>(connect_tcp(endpoint, deadline), device_);
  std::lock_guard<std::mutex> lock(connections_mutex_);
  auto inserted = connections_.emplace(peer, connection);
  return inserted.first->second;  // another thread may have connected first
}

void StagedTcpTransport::forget(const std::string& peer,
                                const std::shared_ptr<Connection>& connection) {
  std::lock_guard<std::mutex> lock(connections_mutex_);
  auto it = connections_.find(peer);
  if (it != connections_.end() && it->second == connection) connections_.erase(it);
}

void StagedTcpTransport::transfer(const std::string& peer_address,
                                  const std::vector<hal::TransferOp>& ops, Deadline deadline) {
  for (const auto& op : ops) {
    MEMLOOM_CHECK_ARG(
        op.bytes == 0 || op.local_address != nullptr,
        "transfer: an op of " + std::to_string(op.bytes) + " bytes has no local address");
    MEMLOOM_CHECK_ARG(op.direction == hal::TransferOp::Direction::kRead ||
                          op.direction == hal::TransferOp::Direction::kWrite,
                      "transfer: unknown direction");
  }
  std::vector<const hal::TransferOp*> work;
  for (const auto& op : ops) {
    if (op.bytes > 0) work.push_back(&op);
  }
  if (work.empty()) return;

  std::shared_ptr<Connection> connection = connection_to(peer_address, deadline);
  std::lock_guard<std::mutex> lock(connection->mutex);
  const int fd = connection->socket.fd();
  auto send_requests = [&] {
    for (const hal::TransferOp* op : work) {
      const bool write = op->direction == hal::TransferOp::Direction::kWrite;
      RequestHeader request{kMagic, write ? kWrite : kRead, op->remote_address, op->bytes};
      send_all(fd, &request, sizeof(request), deadline);
      if (write) connection->outgoing.send_from(fd, op->local_address, op->bytes, deadline);
    }
  };
  std::string refusal;
  auto receive_responses = [&] {
    for (const hal::TransferOp* op : work) {
      ResponseHeader response{};
      recv_all(fd, &response, sizeof(response), deadline);
      if (response.magic != kMagic || response.message_length > kMaxMessage) {
        raise(Status::kCommunication, "the peer answered in another protocol");
      }
      std::string message(response.message_length, '\0');
      recv_all(fd, message.data(), message.size(), deadline);
      if (response.status != 0) {
        if (refusal.empty()) refusal = message;
        continue;
      }
      if (op->direction == hal::TransferOp::Direction::kRead) {
        if (response.bytes != op->bytes) {
          raise(Status::kCommunication, "the peer answered a read with the wrong length");
        }
        connection->incoming.receive_into(fd, op->local_address, op->bytes, deadline);
      }
    }
  };

  try {
    if (work.size() == 1) {
      send_requests();
      receive_responses();
    } else {
      std::exception_ptr send_error;
      std::thread sender([&] {
        try {
          send_requests();
        } catch (...) {
          send_error = std::current_exception();
          connection->socket.shutdown();  // the receiving side must not wait for answers
        }
      });
      try {
        receive_responses();
      } catch (...) {
        connection->socket.shutdown();
        sender.join();
        throw;
      }
      sender.join();
      if (send_error) std::rethrow_exception(send_error);
    }
  } catch (const Error& error) {
    // The byte stream is out of step now: the connection is dropped, the next transfer redials.
    // (The receiving side waits on the caller's thread, so the caller's interrupt check ends it;
    // the shut-down socket then ends the sender thread's wait.)
    forget(peer_address, connection);
    connection->socket.shutdown();
    const Status status = error.status();
    raise(status == Status::kTimeout || status == Status::kInterrupted ? status
                                                                       : Status::kCommunication,
          "transfer with " + peer_address + " failed: " + error.what());
  }
  if (!refusal.empty()) raise(Status::kInvalidInput, refusal);
}

}  // namespace memloom::cuda
