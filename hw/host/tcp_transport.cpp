#include "hw/host/tcp_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>

#include "hw/host/tcp_transfer_pipeline.h"
#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/interrupt_check.h"

namespace memloom::host {
namespace {

// Connections to one peer beyond the first serve transfers that run at once (several threads,
// or a large transfer and small ones): each takes a connection of its own, so a small transfer
// does not wait behind a large one. The serving side answers up to four connections at once.
constexpr size_t kConnectionsPerPeer = 4;

int connect_to(const std::string& peer, Deadline deadline) {
  wire::Endpoint endpoint = wire::parse_tcp_url(peer);
  int fd = ::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) raise_errno("transport socket", errno);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&endpoint.address), endpoint.length);
  int error = rc == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    bool connected = false;
    try {
      connected = wire::wait_ready(fd, POLLOUT, deadline);
    } catch (...) {  // interrupted by the caller
      ::close(fd);
      throw;
    }
    if (!connected) {
      ::close(fd);
      raise(Status::kTimeout, "timed out connecting to transport endpoint " + peer);
    }
    socklen_t length = sizeof(error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  }
  if (error != 0) {
    ::close(fd);
    raise(Status::kCommunication,
          "cannot reach transport endpoint " + peer + ": " + std::strerror(error));
  }
  wire::tune_connection(fd);
  return fd;
}

// An idle connection has nothing to read; if it does, the peer closed it (or it is out of step).
bool idle_connection_usable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace

// Used by one transfer at a time: the one that took it from its peer's idle list.
struct TcpTransport::Connection {
  int fd = -1;
  StagingBuffers staging;

  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
  void drop() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct TcpTransport::Peer {
  std::mutex mutex;
  std::condition_variable freed;
  std::vector<std::unique_ptr<Connection>> idle;  // the most recently used last
  size_t connections = 0;                         // idle and in use
};

std::shared_ptr<TcpTransport::Peer> TcpTransport::peer_for(const std::string& peer_address) {
  std::lock_guard<std::mutex> lock(peers_mutex_);
  auto& peer = peers_[peer_address];
  if (!peer) peer = std::make_shared<Peer>();
  return peer;
}

void TcpTransport::transfer(const std::string& peer_address,
                            const std::vector<hal::TransferOp>& ops, Deadline deadline) {
  std::vector<TransferBatch> batches = plan_transfer(ops, staging_.get());
  if (batches.empty()) return;
  wire::parse_tcp_url(peer_address);  // a malformed address is the caller's error, not the peer's
  std::shared_ptr<Peer> peer = peer_for(peer_address);
  std::unique_ptr<Connection> connection;
  {
    std::unique_lock<std::mutex> lock(peer->mutex);
    while (peer->idle.empty() && peer->connections >= kConnectionsPerPeer) {
      if (deadline.expired()) {
        raise(Status::kTimeout, "timed out waiting for one of the " +
                                    std::to_string(kConnectionsPerPeer) + " connections to " +
                                    peer_address + " that other transfers use");
      }
      base::throw_if_interrupted();  // unlocks on the way out
      const auto slice =
          std::chrono::milliseconds(deadline.poll_timeout_ms(base::interruptible_slice_ms(1000)));
      peer->freed.wait_for(lock, slice);
    }
    if (!peer->idle.empty()) {
      connection = std::move(peer->idle.back());
      peer->idle.pop_back();
    } else {
      connection = std::make_unique<Connection>();
      connection->staging.staging = staging_.get();
      ++peer->connections;
    }
  }
  struct GiveBack {
    Peer& peer;
    std::unique_ptr<Connection>& connection;
    ~GiveBack() {
      std::lock_guard<std::mutex> lock(peer.mutex);
      peer.idle.push_back(std::move(connection));
      peer.freed.notify_one();
    }
  } give_back{*peer, connection};
  if (connection->fd >= 0 && !idle_connection_usable(connection->fd)) connection->drop();
  if (connection->fd < 0) {
    const int fd = connect_to(peer_address, deadline);
    try {
      wire::prove_membership(fd, peer_address, secret_, deadline);
    } catch (...) {
      ::close(fd);
      throw;
    }
    connection->fd = fd;
  }
  try {
    run_transfer(connection->fd, batches, connection->staging, peer_address, deadline);
  } catch (const Error& error) {
    // A refused batch leaves the connection in step; anything else (an interruption too) leaves
    // it unknown: the next transfer that takes it connects again.
    if (error.status() != Status::kInvalidInput) connection->drop();
    throw;
  }
}

}  // namespace memloom::host
