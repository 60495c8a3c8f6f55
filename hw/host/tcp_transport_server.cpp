#include "hw/host/tcp_transport_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "hw/host/host_address.h"
#include "hw/host/overlapping_batches.h"
#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "src/base/range_map.h"
#include "src/base/tcp_address.h"

namespace memloom::host {
namespace {

// A peer that stalls in the middle of a batch for this long is dropped, so one broken client
// cannot hold a serving thread (or a withdraw()) for long.
constexpr auto kStallTimeout = std::chrono::seconds(10);
// Serving threads, started as batches wait and none is idle. A batch's work is copying (memcpy
// or a staging copy) and socket calls, so more threads than this add little throughput; four
// keep peers served while as many others stall.
constexpr size_t kServeThreads = 4;
// How long a serving thread waits for the next request of the connection it just answered before
// handing it back to the poll thread. A requester that goes on (a loop of small synchronous
// copies) sends its next batch within microseconds; answering it on the same thread saves the two
// thread hand-offs that otherwise made an 8-byte round trip several times slower.
constexpr auto kLinger = std::chrono::microseconds(500);
constexpr size_t kMaxMessageBytes = 1024;
// The serving side's staging buffer: the requesting side sends pieces of at most this size.
constexpr size_t kStagingBytes = 2 << 20;
// A new connection's time to prove it belongs to the job, and how many may wait at once.
constexpr auto kProofTimeout = std::chrono::seconds(5);
constexpr size_t kMaxUnproven = 256;

// Sends a few bytes at once, or nothing: a rank always has room for them in a fresh socket.
bool send_all_now(int fd, const void* data, size_t bytes) {
  return ::send(fd, data, bytes, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(bytes);
}

constexpr auto range_length = [](const auto& range) -> uint64_t { return range.size; };

}  // namespace

TcpTransportServer::TcpTransportServer(BufferStaging* staging, const hal::TransportOptions& options)
    : secret_(options.job_secret), staging_(staging) {
  const std::string host = options.host.empty() ? host::host_address() : options.host;
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
          "cannot listen on " + host + " (" +
              (options.host.empty() ? "MEMLOOM_HOST_ADDR" : "the transport's host") +
              " must be an address of this host): " + std::strerror(error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  address_ = host::tcp_url(host, base::socket_port(bound));
  // Non-blocking: a serving thread handing back a connection never waits on a full pipe (the
  // poll thread is then about to wake anyway).
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    int error = errno;
    ::close(listen_fd_);
    raise_errno("transport wake pipe", error);
  }
  wire::set_nonblocking(listen_fd_);
  poll_thread_ = std::thread([this] { serve(); });
}

TcpTransportServer::~TcpTransportServer() {
  {
    std::lock_guard<std::mutex> lock(work_mutex_);
    stopping_ = true;
    // A serving thread waiting on a stalled peer returns at once instead of at kStallTimeout.
    for (int connection : in_service_) ::shutdown(connection, SHUT_RDWR);
  }
  work_ready_.notify_all();
  wake_poll_thread();
  poll_thread_.join();
  for (std::thread& thread : serving_threads_) thread.join();
  for (int connection : requests_waiting_) ::close(connection);
  for (int connection : handed_back_) ::close(connection);
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void TcpTransportServer::wake_poll_thread() {
  char byte = 1;
  ssize_t written = ::write(wake_pipe_[1], &byte, 1);  // FORTIFY builds reject a (void) cast
  (void)written;
}

void TcpTransportServer::hand_to_serving_thread(int connection) {
  {
    std::lock_guard<std::mutex> lock(work_mutex_);
    requests_waiting_.push_back(connection);
    if (idle_serving_threads_ < requests_waiting_.size() &&
        serving_threads_.size() < kServeThreads) {
      serving_threads_.emplace_back([this] { serve_batches(); });
    }
  }
  work_ready_.notify_one();
}

bool TcpTransportServer::next_request_comes_soon(int connection) {
  {
    std::lock_guard<std::mutex> lock(work_mutex_);
    // Other connections' requests come first; a stopping server shuts the connection down,
    // which ends the wait below at once.
    if (stopping_ || !requests_waiting_.empty()) return false;
  }
  pollfd ready{connection, POLLIN, 0};
  const timespec linger{0, std::chrono::duration_cast<std::chrono::nanoseconds>(kLinger).count()};
  return ::ppoll(&ready, 1, &linger, nullptr) == 1;
}

void TcpTransportServer::serve_batches() {
  StagingBuffer staging_buffer;  // allocated when this thread first serves staged memory
  std::unique_lock<std::mutex> lock(work_mutex_);
  while (true) {
    ++idle_serving_threads_;
    work_ready_.wait(lock, [&] { return stopping_ || !requests_waiting_.empty(); });
    --idle_serving_threads_;
    if (stopping_) return;
    const int connection = requests_waiting_.front();
    requests_waiting_.pop_front();
    in_service_.insert(connection);
    lock.unlock();
    bool keep = answer(connection, staging_buffer);
    while (keep && next_request_comes_soon(connection)) keep = answer(connection, staging_buffer);
    lock.lock();
    in_service_.erase(connection);
    if (keep && !stopping_) {
      handed_back_.push_back(connection);
      wake_poll_thread();
    } else {
      ::close(connection);
    }
  }
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

// `fds`: the wake pipe, the listener and the proven connections; the unproven ones are polled
// after them, in unproven_'s order.
void TcpTransportServer::serve() {
  std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
  std::vector<pollfd> polled;
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    while (!unproven_.empty() && unproven_.front().deadline <= now) {
      ::close(unproven_.front().fd);
      unproven_.pop_front();
    }
    int timeout = -1;
    if (!unproven_.empty()) {
      timeout = static_cast<int>(
          std::chrono::ceil<std::chrono::milliseconds>(unproven_.front().deadline - now).count());
    }
    polled = fds;
    const size_t first_unproven = polled.size();
    for (const Unproven& unproven : unproven_) polled.push_back({unproven.fd, POLLIN, 0});
    int rc = ::poll(polled.data(), polled.size(), timeout);
    if (rc < 0) {
      if (errno == EINTR) continue;
      MEMLOOM_LOG(kError, "transport server poll failed: " << std::strerror(errno));
      break;
    }
    if (polled[0].revents != 0) {
      char drained[64];
      while (::read(wake_pipe_[0], drained, sizeof(drained)) > 0) {
      }
      std::lock_guard<std::mutex> lock(work_mutex_);
      if (stopping_) break;
      for (int connection : handed_back_) fds.push_back({connection, POLLIN, 0});
      handed_back_.clear();
    }
    // A request (or a hang-up, which the serving thread notices) leaves the poll set until the
    // serving thread hands the connection back.
    std::vector<size_t> handed;
    for (size_t i = 2; i < first_unproven; ++i) {
      if (polled[i].revents != 0) handed.push_back(i);
    }
    for (auto it = handed.rbegin(); it != handed.rend(); ++it) {
      hand_to_serving_thread(fds[*it].fd);
      fds.erase(fds.begin() + static_cast<long>(*it));
    }
    std::deque<Unproven> waiting;
    for (size_t i = 0; i < unproven_.size(); ++i) {
      if (polled[first_unproven + i].revents == 0 || !hear_proof(unproven_[i], fds)) {
        waiting.push_back(unproven_[i]);
      }
    }
    unproven_.swap(waiting);
    if (polled[1].revents & POLLIN) {
      while (true) {
        int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (connection < 0) break;
        admit(connection);
      }
    }
  }
  for (size_t i = 2; i < fds.size(); ++i) ::close(fds[i].fd);
  for (const Unproven& unproven : unproven_) ::close(unproven.fd);
}

void TcpTransportServer::admit(int connection) {
  wire::tune_connection(connection);
  Unproven unproven{connection, std::chrono::steady_clock::now() + kProofTimeout, {}, {}, 0};
  wire::ServerHello hello{wire::kHelloMagic, wire::kHelloVersion, {}};
  try {
    unproven.nonce = random_nonce();
  } catch (const Error& error) {
    MEMLOOM_LOG(kError, "transport server " << address_ << ": " << error.what());
    ::close(connection);
    return;
  }
  std::memcpy(hello.nonce, unproven.nonce.data(), unproven.nonce.size());
  if (!send_all_now(connection, &hello, sizeof(hello))) {
    ::close(connection);
    return;
  }
  if (unproven_.size() >= kMaxUnproven) {
    ::close(unproven_.front().fd);
    unproven_.pop_front();
  }
  unproven_.push_back(unproven);
}

bool TcpTransportServer::hear_proof(Unproven& unproven, std::vector<pollfd>& served) {
  auto* in = reinterpret_cast<char*>(&unproven.in);
  const ssize_t n =
      ::recv(unproven.fd, in + unproven.have, sizeof(unproven.in) - unproven.have, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) {
    ::close(unproven.fd);
    return true;
  }
  unproven.have += static_cast<size_t>(n);
  if (unproven.have < sizeof(unproven.in)) return false;
  Nonce requester_nonce{};
  std::memcpy(requester_nonce.data(), unproven.in.nonce, requester_nonce.size());
  bool member = false;
  wire::ServerVerdict verdict{wire::kHelloMagic, 0, {}};
  try {  // the poll thread must not throw (OpenSSL failing is the only way here)
    member = unproven.in.magic == wire::kHelloMagic &&
             proof_matches(
                 prove(secret_, ProofRole::kRequester, address_, requester_nonce, unproven.nonce),
                 unproven.in.proof);
    if (member) {
      const Proof mine =
          prove(secret_, ProofRole::kServer, address_, requester_nonce, unproven.nonce);
      std::memcpy(verdict.proof, mine.data(), mine.size());
    }
  } catch (const Error& error) {
    MEMLOOM_LOG(kError, "transport server " << address_ << ": " << error.what());
    member = false;
  }
  if (!member) {
    verdict.status = static_cast<uint32_t>(Status::kCommunication);
    MEMLOOM_LOG(kDebug, "transport server " << address_
                                            << " refused a connection: no proof of the job secret");
  }
  if (!send_all_now(unproven.fd, &verdict, sizeof(verdict)) || !member) {
    ::close(unproven.fd);
    return true;
  }
  served.push_back({unproven.fd, POLLIN, 0});
  return true;
}

bool TcpTransportServer::answer(int connection, StagingBuffer& staging_buffer) {
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
  uint64_t lowest = UINT64_MAX, highest = 0;  // the batch's span (OverlappingBatches)
  for (const auto& op : ops) {
    lowest = std::min(lowest, op.remote_address);
    highest = std::max(highest, op.remote_address + op.bytes);
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
  // Batches of other connections that overlap this one where either writes run first (see
  // overlapping_batches.h): an abandoned write still being applied lands before this batch.
  std::optional<OverlappingBatches::Hold> hold =
      overlapping_.enter(lowest, highest, writes > 0, stall);
  if (!hold) {
    MEMLOOM_LOG(kWarn, "transport server " << address_
                                           << " dropped a batch that waited "
                                              "for an overlapping one past the stall timeout");
    return false;
  }
  // The answer's header goes first when the batch reads (the read payloads follow it); a batch of
  // writes only sends it with the trailer once the payloads are in place: one send, and one
  // wake-up of the requester, instead of two (the stream is the same).
  const bool header_first = reads > 0;
  if (header_first && !wire::write_exact(connection, &response, sizeof(response), stall)) {
    return false;
  }
  wire::ResponseTrailer trailer{request.batch_id};
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
      if (!move_staged(connection, ops, i, end, staging_buffer, stall)) return false;
      i = end;
      continue;
    }
    // A run of host-memory ops of one direction moves in few system calls: one per op made a
    // batch of 1024 x 4 KiB reads several times slower (a send and a segment per op).
    const bool write = op.kind == wire::kOpWrite;
    std::vector<iovec> iovs;
    size_t end = i;
    for (; end < ops.size() && !staged[end] && ops[end].kind == op.kind; ++end) {
      iovs.push_back({reinterpret_cast<void*>(static_cast<uintptr_t>(ops[end].remote_address)),
                      static_cast<size_t>(ops[end].bytes)});
    }
    const bool trailer_too = !write && end == ops.size();  // the answer's last bytes, with them
    if (trailer_too) iovs.push_back({&trailer, sizeof(trailer)});
    if (!(write ? wire::read_iov_exact(connection, iovs, stall)
                : wire::write_iov_exact(connection, iovs, stall))) {
      return false;
    }
    if (trailer_too) return true;
    i = end;
  }
  if (header_first) return wire::write_exact(connection, &trailer, sizeof(trailer), stall);
  std::vector<iovec> answer{{&response, sizeof(response)}, {&trailer, sizeof(trailer)}};
  return wire::write_iov_exact(connection, answer, stall);
}

bool TcpTransportServer::move_staged(int connection, const std::vector<wire::OpDescriptor>& ops,
                                     size_t begin, size_t end, StagingBuffer& staging_buffer,
                                     Deadline stall) {
  auto memory_of = [&](size_t i) {
    return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(ops[i].remote_address));
  };
  const bool write = ops[begin].kind == wire::kOpWrite;
  try {
    if (staging_buffer.data() == nullptr) {
      staging_buffer = StagingBuffer(*staging_, kStagingBytes);
    }
    std::byte* host = staging_buffer.data();
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
    // A serving thread must not throw; the peer sees its connection fail.
    MEMLOOM_LOG(kError, "transport server " << address_
                                            << ": staging exposed memory failed: " << error.what());
    return false;
  }
}

}  // namespace memloom::host
