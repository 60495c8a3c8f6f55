#include "hw/host/tcp_transport_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "hw/host/host_address.h"
#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "src/base/range_map.h"
#include "src/base/tcp_address.h"

namespace memloom::host {
namespace {

// A peer that stalls in the middle of a batch for this long is dropped, so one broken client
// cannot hold the server thread (or a withdraw()) for long.
constexpr auto kStallTimeout = std::chrono::seconds(10);
constexpr size_t kMaxMessageBytes = 1024;
// The serving side's staging buffer: the requesting side sends pieces of at most this size.
constexpr size_t kStagingBytes = 2 << 20;

constexpr auto range_length = [](const auto& range) -> uint64_t { return range.size; };

}  // namespace

TcpTransportServer::TcpTransportServer(BufferStaging* staging) : staging_(staging) {
  const std::string host = host::host_address();
  wire::Endpoint endpoint = wire::parse_tcp_url(host::tcp_url(host, 1));
  listen_fd_ = ::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) raise_errno("transport socket", errno);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Port 0: the kernel picks a free one.
  base::set_socket_port(&endpoint.address, 0);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&endpoint.address), endpoint.length) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    int error = errno;
    ::close(listen_fd_);
    raise(Status::kCommunication,
          "cannot listen on " + host +
              " (MEMLOOM_HOST_ADDR must be an address of this host): " + std::strerror(error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  address_ = host::tcp_url(host, base::socket_port(bound));
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    int error = errno;
    ::close(listen_fd_);
    raise_errno("transport wake pipe", error);
  }
  wire::set_nonblocking(listen_fd_);
  thread_ = std::thread([this] { serve(); });
}

TcpTransportServer::~TcpTransportServer() {
  char byte = 1;
  ssize_t written = ::write(wake_pipe_[1], &byte, 1);  // FORTIFY builds reject a (void) cast
  (void)written;
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void TcpTransportServer::expose(void* address, size_t size) {
  MEMLOOM_CHECK_ARG(address != nullptr && size > 0, "expose needs a non-null, non-empty range");
  auto start = reinterpret_cast<uintptr_t>(address);
  MEMLOOM_CHECK_ARG(start + size > start, "exposed range wraps around the address space");
  std::unique_lock<std::shared_mutex> lock(ranges_mutex_);
  MEMLOOM_CHECK_ARG(base::first_overlap(ranges_, start, size, range_length) == ranges_.end(),
                    "the range to expose overlaps a range already exposed");
  ranges_.emplace(start,
                  ExposedRange{size, staging_ != nullptr && staging_->needs_staging(address)});
}

void TcpTransportServer::withdraw(void* address) {
  std::unique_lock<std::shared_mutex> lock(ranges_mutex_);
  MEMLOOM_CHECK_ARG(ranges_.erase(reinterpret_cast<uintptr_t>(address)) == 1,
                    "withdraw: the address is not the start of an exposed range");
}

std::string TcpTransportServer::check_range(uint64_t address, uint64_t bytes, bool* staged) const {
  auto describe = [&] {
    char text[96];
    std::snprintf(text, sizeof(text), "[0x%llx, +%llu)", static_cast<unsigned long long>(address),
                  static_cast<unsigned long long>(bytes));
    return std::string(text);
  };
  if (address + bytes < address) return "range " + describe() + " wraps around";
  auto range = base::find_containing(ranges_, address, bytes, range_length);
  if (range != ranges_.end()) {
    *staged = range->second.staged;
    return "";
  }
  return "range " + describe() + " is not inside memory exposed by " + address_;
}

void TcpTransportServer::serve() {
  std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
  while (true) {
    for (auto& p : fds) p.revents = 0;
    int rc = ::poll(fds.data(), fds.size(), -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MEMLOOM_LOG(kError, "transport server poll failed: " << std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    std::vector<size_t> dropped;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents != 0 && !answer(fds[i].fd)) dropped.push_back(i);
    }
    for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
      ::close(fds[*it].fd);
      fds.erase(fds.begin() + static_cast<long>(*it));
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (connection < 0) break;
        wire::set_nodelay(connection);
        fds.push_back({connection, POLLIN, 0});
      }
    }
  }
  for (size_t i = 2; i < fds.size(); ++i) ::close(fds[i].fd);
}

bool TcpTransportServer::answer(int connection) {
  const Deadline stall = Deadline::after(kStallTimeout);
  wire::RequestHeader request{};
  if (!wire::read_exact(connection, &request, sizeof(request), stall)) return false;
  if (request.magic != wire::kRequestMagic || request.op_count > wire::kMaxOpsPerBatch ||
      request.write_bytes > wire::kMaxPayloadPerBatch ||
      request.read_bytes > wire::kMaxPayloadPerBatch) {
    MEMLOOM_LOG(kWarn, "transport server " << address_ << " dropped a malformed request");
    return false;
  }
  std::vector<wire::OpDescriptor> ops(request.op_count);
  if (!wire::read_exact(connection, ops.data(), ops.size() * sizeof(wire::OpDescriptor), stall)) {
    return false;
  }
  uint64_t writes = 0, reads = 0;
  for (const auto& op : ops) {
    if (op.kind == wire::kOpWrite)
      writes += op.bytes;
    else if (op.kind == wire::kOpRead)
      reads += op.bytes;
    else
      return false;
  }
  if (writes != request.write_bytes || reads != request.read_bytes) return false;

  std::shared_lock<std::shared_mutex> lock(ranges_mutex_);
  std::string refusal;
  std::vector<bool> staged(ops.size(), false);
  for (size_t i = 0; i < ops.size() && refusal.empty(); ++i) {
    bool in_staged_range = false;
    refusal = check_range(ops[i].remote_address, ops[i].bytes, &in_staged_range);
    staged[i] = in_staged_range;
  }
  wire::ResponseHeader response{wire::kResponseMagic, 0, request.batch_id, 0, reads};
  if (!refusal.empty()) {
    lock.unlock();
    // Consume the batch's write payload so the next request starts where the peer expects.
    std::vector<char> scratch(64 << 10);
    for (uint64_t left = writes; left > 0;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, scratch.size()));
      if (!wire::read_exact(connection, scratch.data(), n, stall)) return false;
      left -= n;
    }
    refusal.resize(std::min(refusal.size(), kMaxMessageBytes));
    response.status = static_cast<uint32_t>(Status::kInvalidInput);
    response.message_bytes = refusal.size();
    response.read_bytes = 0;
    return wire::write_exact(connection, &response, sizeof(response), stall) &&
           wire::write_exact(connection, refusal.data(), refusal.size(), stall);
  }
  if (!wire::write_exact(connection, &response, sizeof(response), stall)) return false;
  for (size_t i = 0; i < ops.size();) {
    const wire::OpDescriptor& op = ops[i];
    if (staged[i]) {
      // A run of staged ops of one direction that fit in the staging buffer together.
      size_t end = i + 1;
      uint64_t run_bytes = op.bytes;
      while (end < ops.size() && staged[end] && ops[end].kind == op.kind &&
             run_bytes + ops[end].bytes <= kStagingBytes) {
        run_bytes += ops[end++].bytes;
      }
      if (!move_staged(connection, ops, i, end, stall)) return false;
      i = end;
      continue;
    }
    auto* memory = reinterpret_cast<void*>(static_cast<uintptr_t>(op.remote_address));
    bool ok = op.kind == wire::kOpWrite ? wire::read_exact(connection, memory, op.bytes, stall)
                                        : wire::write_exact(connection, memory, op.bytes, stall);
    if (!ok) return false;
    ++i;
  }
  wire::ResponseTrailer trailer{request.batch_id};
  return wire::write_exact(connection, &trailer, sizeof(trailer), stall);
}

bool TcpTransportServer::move_staged(int connection, const std::vector<wire::OpDescriptor>& ops,
                                     size_t begin, size_t end, Deadline stall) {
  auto memory_of = [&](size_t i) {
    return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(ops[i].remote_address));
  };
  const bool write = ops[begin].kind == wire::kOpWrite;
  try {
    if (staging_buffer_.data() == nullptr) {
      staging_buffer_ = StagingBuffer(*staging_, kStagingBytes);
    }
    std::byte* host = staging_buffer_.data();
    if (ops[begin].bytes > kStagingBytes) {  // one op, larger than the buffer: a piece at a time
      std::byte* memory = memory_of(begin);
      for (uint64_t done = 0; done < ops[begin].bytes;) {
        const auto n =
            static_cast<size_t>(std::min<uint64_t>(kStagingBytes, ops[begin].bytes - done));
        if (write) {
          if (!wire::read_exact(connection, host, n, stall)) return false;
          staging_->copy(memory + done, host, n, stall);
        } else {
          staging_->copy(host, memory + done, n, stall);
          if (!wire::write_exact(connection, host, n, stall)) return false;
        }
        done += n;
      }
      return true;
    }
    // The run's payloads follow each other on the wire: they share the buffer end to end.
    std::vector<StagingCopy> copies;
    size_t bytes = 0;
    for (size_t i = begin; i < end; ++i) {
      const auto n = static_cast<size_t>(ops[i].bytes);
      copies.push_back(write ? StagingCopy{memory_of(i), host + bytes, n}
                             : StagingCopy{host + bytes, memory_of(i), n});
      bytes += n;
    }
    if (write) {
      if (!wire::read_exact(connection, host, bytes, stall)) return false;
      staging_->copy_all(copies, stall);
      return true;
    }
    staging_->copy_all(copies, stall);
    return wire::write_exact(connection, host, bytes, stall);
  } catch (const Error& error) {
    // The serving thread must not throw; the peer sees its connection fail.
    MEMLOOM_LOG(kError, "transport server " << address_
                                            << ": staging exposed memory failed: " << error.what());
    return false;
  }
}

}  // namespace memloom::host
