#include "src/smem/trans/data_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::smem::trans {
namespace {

// accept() failed for want of descriptors or memory: try again after this long.
constexpr int kAcceptPauseMs = 100;
constexpr int kAcceptBurst = 64;

Deadline forever() {
  return Deadline::after(std::chrono::hours(24 * 365));
}

// Waits until fd is ready for `events`; false when the server stops. Throws kTimeout.
bool wait_ready(int fd, short events, Deadline deadline, int stop_fd) {
  switch (wait_for(fd, events, deadline, stop_fd)) {
    case WaitResult::kReady:
      return true;
    case WaitResult::kStopped:
      return false;
    case WaitResult::kTimeout:
      break;
  }
  raise(Status::kTimeout, "an initiator went silent in the middle of a frame");
}

}  // namespace

DataServer::DataServer(UniqueFd listener, ServerIdentity identity, RegionTable& regions,
                       std::chrono::milliseconds io_timeout, std::shared_ptr<StreamPool> staging,
                       ServerLimits limits)
    : listener_(std::move(listener)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      identity_(std::move(identity)),
      regions_(regions),
      io_timeout_(io_timeout),
      staging_(std::move(staging)),
      limits_(limits) {
  if (!stop_fd_.valid()) raise_errno("eventfd for the transfer data server", errno);
  acceptor_ = std::thread([this] { accept_loop(); });
}

DataServer::~DataServer() {
  stop();
}

void DataServer::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  uint64_t one = 1;
  // An eventfd write only fails on counter overflow, which one write cannot cause.
  ssize_t written = ::write(stop_fd_.get(), &one, sizeof(one));
  (void)written;
  if (acceptor_.joinable()) acceptor_.join();
  listener_.reset();
  std::list<std::unique_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connections.swap(connections_);
  }
  for (auto& connection : connections) {
    if (connection->thread.joinable()) connection->thread.join();
  }
}

// One thread for the listener and every connection still proving it belongs to the job.
void DataServer::accept_loop() {
  HelloGate gate(identity_.unique_id, identity_.incarnation, identity_.secret, limits_.hello);
  auto accept_paused_until = std::chrono::steady_clock::time_point::min();
  std::vector<pollfd> fds;
  while (true) {
    const bool accepting = std::chrono::steady_clock::now() >= accept_paused_until;
    fds.clear();
    fds.push_back(pollfd{stop_fd_.get(), POLLIN, 0});
    fds.push_back(pollfd{accepting ? listener_.get() : -1, POLLIN, 0});
    gate.poll_set(fds);
    int timeout = gate.next_deadline_ms();
    if (!accepting) timeout = timeout < 0 ? kAcceptPauseMs : std::min(timeout, kAcceptPauseMs);
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
      MEMLOOM_LOG(kError, "transfer server " << identity_.unique_id
                                             << ": poll failed: " << std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(kAcceptPauseMs));
      continue;
    }
    if (fds[0].revents != 0) return;
    for (UniqueFd& fd : gate.advance(fds.data() + 2)) start_serving(std::move(fd));
    if (accepting && fds[1].revents != 0 && !accept_pending(gate)) {
      accept_paused_until =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
    }
  }
}

bool DataServer::accept_pending(HelloGate& gate) {
  // A burst of connections is taken in one go, each one in the gate before the next.
  for (int i = 0; i < kAcceptBurst; ++i) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      tune_data_socket(fd);
      gate.admit(UniqueFd(fd));
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
      return true;
    // Out of descriptors or memory: the listener stays readable, so pause instead of spinning;
    // the connections wait in the backlog (or are refused by the kernel) meanwhile.
    std::string note;
    if (accept_warnings_.allow(&note)) {
      MEMLOOM_LOG(kWarn, "transfer server " << identity_.unique_id
                                            << ": accept failed: " << std::strerror(errno) << note);
    }
    return false;
  }
  return true;
}

void DataServer::start_serving(UniqueFd fd) {
  const size_t running = reap_finished();
  std::string note;
  if (running >= limits_.max_connections) {
    if (refusal_warnings_.allow(&note)) {
      MEMLOOM_LOG(kWarn, "transfer server " << identity_.unique_id
                                            << ": refusing a connection: " << running
                                            << " connections are served already" << note);
    }
    send_verdict(fd.get(), static_cast<int32_t>(Status::kCommunication),
                 "refused: it serves " + std::to_string(running) + " connections already");
    return;
  }
  auto connection = std::make_unique<Connection>();
  connection->fd = std::move(fd);
  Connection* raw = connection.get();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return;
  try {
    raw->thread = std::thread([this, raw] { serve(*raw); });
  } catch (const std::system_error& error) {
    // No thread to be had (RLIMIT_NPROC, memory): this connection is refused, the server lives.
    if (refusal_warnings_.allow(&note)) {
      MEMLOOM_LOG(kWarn, "transfer server " << identity_.unique_id
                                            << ": refusing a connection: cannot start a thread ("
                                            << error.what() << ")" << note);
    }
    send_verdict(raw->fd.get(), static_cast<int32_t>(Status::kCommunication),
                 "refused: it cannot start a thread to serve the connection");
    return;
  }
  connections_.push_back(std::move(connection));
}

size_t DataServer::reap_finished() {
  std::list<std::unique_ptr<Connection>> finished;
  size_t running = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->finished.load()) {
        finished.push_back(std::move(*it));
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    running = connections_.size();
  }
  for (auto& connection : finished) connection->thread.join();
  return running;
}

// An authenticated connection: read and write frames until it closes.
void DataServer::serve(Connection& connection) {
  const int fd = connection.fd.get();
  try {
    // The initiator waits for this verdict on its proof before its first frame.
    if (!send_verdict(fd, 0, "")) throw Error(Status::kCommunication, "the verdict did not fit");
    Staging staging;
    while (true) {
      wire::FrameHeader header{};
      if (!wait_ready(fd, POLLIN, forever(), stop_fd_.get())) break;
      if (!recv_exact(fd, &header, sizeof(header), io_deadline(), stop_fd_.get())) break;
      if (header.magic != wire::kFrameMagic) {
        MEMLOOM_LOG(kWarn, "transfer server "
                               << identity_.unique_id
                               << ": dropping a connection that speaks another protocol");
        break;
      }
      auto kind = static_cast<wire::FrameKind>(header.kind);
      if (kind != wire::FrameKind::kWrite && kind != wire::FrameKind::kRead) break;
      if (!serve_transfer(fd, header, staging)) break;
    }
  } catch (const Error& error) {
    // An initiator that died or went silent costs only its own connection.
    MEMLOOM_LOG(kDebug, "transfer server " << identity_.unique_id
                                           << ": connection closed: " << error.what());
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "transfer server " << identity_.unique_id
                                          << ": connection failed: " << error.what());
  }
  connection.fd.reset();
  connection.finished.store(true);
}

bool DataServer::serve_transfer(int fd, const wire::FrameHeader& header, Staging& staging) {
  if (header.op_count == 0 || header.op_count > wire::kMaxOpsPerFrame) return false;
  std::vector<wire::OpDescriptor> ops(header.op_count);
  if (!recv_exact(fd, ops.data(), ops.size() * sizeof(wire::OpDescriptor), io_deadline(),
                  stop_fd_.get())) {
    return false;
  }
  uint64_t total = 0;
  for (const auto& op : ops) {
    if (op.bytes > wire::kMaxFrameBytes) return false;
    total += op.bytes;
  }
  if (total != header.payload_bytes || total > wire::kMaxFrameBytes) return false;
  const bool is_write = header.kind == static_cast<uint32_t>(wire::FrameKind::kWrite);
  // Check every op before touching memory: a refused frame changes nothing.
  Status status = Status::kSuccess;
  std::string message;
  std::vector<RegionRef> regions;
  if (!identity_.serves_memory) {
    status = Status::kNotSupported;
    message = "instance '" + identity_.unique_id +
              "' has role SMEM_TRANS_SENDER: its memory is not a transfer target";
  }
  for (size_t i = 0; status == Status::kSuccess && i < ops.size(); ++i) {
    const auto& op = ops[i];
    bool known = false;
    for (const auto& region : regions)
      known = known || region.contains(op.remote_address, op.bytes);
    if (known) continue;
    auto region = op.bytes == 0 ? std::nullopt : regions_.find(op.remote_address, op.bytes);
    if (!region) {
      status = Status::kInvalidInput;
      message = "[" + base::hex(op.remote_address) + ", +" + std::to_string(op.bytes) +
                ") is not inside memory registered by '" + identity_.unique_id + "'";
    } else {
      regions.push_back(*region);
    }
  }
  if (status != Status::kSuccess) {
    if (is_write) drain(fd, total);
    reply(fd, header, static_cast<int32_t>(status), message);
    return true;
  }

  std::vector<const RegionRef*> held;
  for (const auto& region : regions) held.push_back(&region);
  if (staging_) return move_staged(fd, header, ops, held, staging);
  return move_direct(fd, header, ops, held);
}

// Sockets read and write registered memory itself; each system call holds the regions only while
// the kernel copies what is already there.
bool DataServer::move_direct(int fd, const wire::FrameHeader& header,
                             const std::vector<wire::OpDescriptor>& ops,
                             const std::vector<const RegionRef*>& held) {
  std::vector<iovec> iovs;
  iovs.reserve(ops.size());
  for (const auto& op : ops) {
    iovs.push_back(
        iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(op.remote_address)), op.bytes});
  }
  IovCursor cursor(std::move(iovs));
  if (header.kind == static_cast<uint32_t>(wire::FrameKind::kWrite)) {
    while (!cursor.done()) {
      if (!wait_ready(fd, POLLIN, io_deadline(), stop_fd_.get())) return false;
      RegionHolds holds(regions_.slots(), held);
      if (!holds.acquired()) {
        drain(fd, cursor.remaining_bytes());
        reply(fd, header, static_cast<int32_t>(Status::kInvalidInput), deregistered_message());
        return true;
      }
      recv_some(fd, cursor);
    }
    reply(fd, header, 0, "");
    return true;
  }
  wire::ReplyHeader ok{wire::kReplyMagic, 0, header.payload_bytes, header.sequence};
  if (!send_exact(fd, &ok, sizeof(ok), io_deadline(), stop_fd_.get())) return false;
  while (!cursor.done()) {
    if (!wait_ready(fd, POLLOUT, io_deadline(), stop_fd_.get())) return false;
    RegionHolds holds(regions_.slots(), held);
    // The success reply is already on its way: closing is the only honest way to fail now.
    if (!holds.acquired()) return false;
    send_some(fd, cursor);
  }
  return true;
}

// The frame's bytes pass through a host buffer, moved to or from registered memory with stream
// copies while the regions are held.
bool DataServer::move_staged(int fd, const wire::FrameHeader& header,
                             const std::vector<wire::OpDescriptor>& ops,
                             const std::vector<const RegionRef*>& held, Staging& staging) {
  const uint64_t total = header.payload_bytes;
  if (staging.buffer.size() < total) staging.buffer.resize(total);
  char* buffer = staging.buffer.data();
  const bool is_write = header.kind == static_cast<uint32_t>(wire::FrameKind::kWrite);
  if (is_write && !recv_exact(fd, buffer, total, io_deadline(), stop_fd_.get())) return false;
  {
    RegionHolds holds(regions_.slots(), held);
    if (!holds.acquired()) {
      reply(fd, header, static_cast<int32_t>(Status::kInvalidInput), deregistered_message());
      return true;
    }
    try {
      StreamPool::Lease copies(*staging_);
      uint64_t offset = 0;
      for (const auto& op : ops) {
        auto* memory = reinterpret_cast<char*>(static_cast<uintptr_t>(op.remote_address));
        if (is_write) {
          copies.copy(memory, buffer + offset, op.bytes);
        } else {
          copies.copy(buffer + offset, memory, op.bytes);
        }
        offset += op.bytes;
      }
      copies.finish(io_deadline());
    } catch (const Error& error) {
      // Nothing of a read reply has been sent yet: the initiator gets the reason.
      reply(fd, header, static_cast<int32_t>(error.status()),
            "copying registered memory of '" + identity_.unique_id + "' failed: " + error.what());
      return true;
    }
  }
  if (is_write) {
    reply(fd, header, 0, "");
    return true;
  }
  wire::ReplyHeader ok{wire::kReplyMagic, 0, total, header.sequence};
  return send_exact(fd, &ok, sizeof(ok), io_deadline(), stop_fd_.get()) &&
         send_exact(fd, buffer, total, io_deadline(), stop_fd_.get());
}

std::string DataServer::deregistered_message() const {
  return "a target region of '" + identity_.unique_id + "' was deregistered during the transfer";
}

void DataServer::reply(int fd, const wire::FrameHeader& header, int32_t status,
                       const std::string& payload) {
  wire::ReplyHeader out{wire::kReplyMagic, status, payload.size(), header.sequence};
  std::vector<iovec> iovs{iovec{&out, sizeof(out)}};
  if (!payload.empty()) iovs.push_back(iovec{const_cast<char*>(payload.data()), payload.size()});
  IovCursor cursor(std::move(iovs));
  while (!cursor.done()) {
    if (send_some(fd, cursor) > 0) continue;
    if (!wait_ready(fd, POLLOUT, io_deadline(), stop_fd_.get())) return;
  }
}

void DataServer::drain(int fd, uint64_t bytes) {
  std::vector<char> scratch(std::min<uint64_t>(bytes, 1u << 16));
  while (bytes > 0) {
    IovCursor cursor({iovec{scratch.data(), std::min<uint64_t>(bytes, scratch.size())}});
    if (!wait_ready(fd, POLLIN, io_deadline(), stop_fd_.get()))
      raise(Status::kCommunication, "stopping");
    bytes -= recv_some(fd, cursor);
  }
}

}  // namespace memloom::smem::trans
