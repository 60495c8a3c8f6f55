#include "hw/host/zmq_peer_mesh.h"

#include <cstring>

#include "hw/host/host_address.h"
#include "memloom/error.h"
#include "src/base/log.h"
#include "src/base/wait_reporter.h"

namespace memloom::host {
namespace {

struct Envelope {
  uint32_t kind;
  int32_t source;
  uint64_t seq;
};

// Streams travel in messages of this size: big enough to amortise per-message costs, small
// enough that a receiver copies each piece out while the next is in flight.
constexpr size_t kStreamMessageBytes = 1 << 20;
constexpr auto kWaitSlice = std::chrono::milliseconds(20);
// At close, unsent data gets this long to reach live peers (a healthy peer takes milliseconds);
// after an abort only the abort notice matters.
constexpr int kLingerMs = 5000;
constexpr int kAbortLingerMs = 200;

const char* kind_name(MeshKind kind) {
  switch (kind) {
    case MeshKind::kHeaders:
      return "headers";
    case MeshKind::kData:
      return "data";
    case MeshKind::kAbort:
      return "abort";
  }
  return "unknown";
}

void configure(zmq::socket_t& socket, bool ipv6) {
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::rcvhwm, 0);
  socket.set(zmq::sockopt::linger, kLingerMs);
  if (ipv6) socket.set(zmq::sockopt::ipv6, 1);
}

}  // namespace

ZmqPeerMesh::ZmqPeerMesh(int rank, const std::vector<int>& peers, hal::Bootstrap& bootstrap,
                         const std::string& key_prefix, Deadline deadline, AbortHandler on_abort)
    : rank_(rank),
      on_abort_(std::move(on_abort)),
      context_(1),
      router_(context_, zmq::socket_type::router) {
  const std::string host = host_address();
  const bool ipv6 = host.find(':') != std::string::npos;
  configure(router_, ipv6);
  router_.set(zmq::sockopt::linger, 0);
  const std::string bind_url = tcp_url(host, 0);
  try {
    router_.bind(bind_url.substr(0, bind_url.rfind(':')) + ":*");
  } catch (const zmq::error_t& error) {
    raise(Status::kCommunication,
          "cannot bind the collective channel to " + host +
              " (MEMLOOM_HOST_ADDR must be an address of this host): " + error.what());
  }
  address_ = router_.get(zmq::sockopt::last_endpoint);
  bootstrap.put(key_prefix + std::to_string(rank), address_);
  for (int peer : peers) {
    std::string peer_address = bootstrap.wait_get(key_prefix + std::to_string(peer), deadline);
    zmq::socket_t dealer(context_, zmq::socket_type::dealer);
    configure(dealer, peer_address.find('[') != std::string::npos);
    try {
      dealer.connect(peer_address);
    } catch (const zmq::error_t& error) {
      raise(Status::kCommunication, "cannot connect to rank " + std::to_string(peer) + " at '" +
                                        peer_address + "': " + error.what());
    }
    dealers_.emplace(peer, std::move(dealer));
    mailboxes_[peer];
  }
  receiver_ = std::thread([this] { receive_loop(); });
}

ZmqPeerMesh::~ZmqPeerMesh() {
  stopping_ = true;
  if (receiver_.joinable()) receiver_.join();
  std::lock_guard<std::mutex> lock(send_mutex_);
  for (auto& [peer, dealer] : dealers_) {
    if (quick_close_) dealer.set(zmq::sockopt::linger, kAbortLingerMs);
    dealer.close();
  }
  router_.close();
  context_.close();
}

void ZmqPeerMesh::receive_loop() {
  try {
    while (!stopping_) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kWaitSlice);
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      while (true) {
        zmq::message_t parts[3];
        if (!router_.recv(parts[0], zmq::recv_flags::dontwait)) break;
        size_t count = 1;
        while (parts[count - 1].more()) {
          zmq::message_t extra;
          zmq::message_t& target = count < 3 ? parts[count] : extra;
          (void)router_.recv(target, zmq::recv_flags::none);
          ++count;
        }
        if (count != 3 || parts[1].size() != sizeof(Envelope)) {
          MEMLOOM_LOG(kWarn,
                      "collective channel of rank " << rank_ << " dropped a malformed message");
          continue;
        }
        Envelope envelope;
        std::memcpy(&envelope, parts[1].data(), sizeof(envelope));
        auto kind = static_cast<MeshKind>(envelope.kind);
        if (kind == MeshKind::kAbort) {
          on_abort_(envelope.source, parts[2].to_string());
          interrupt();
          continue;
        }
        std::lock_guard<std::mutex> lock(mailbox_mutex_);
        mailboxes_[envelope.source].push_back(Message{kind, envelope.seq, std::move(parts[2])});
        mailbox_cv_.notify_all();
      }
    }
  } catch (const std::exception& error) {
    // Waiting receives then end at their deadline; this only happens if ZeroMQ itself fails.
    MEMLOOM_LOG(kError, "collective channel of rank " << rank_ << " stopped: " << error.what());
  }
}

void ZmqPeerMesh::send_message(int peer, MeshKind kind, uint64_t seq, const void* data,
                               size_t bytes) {
  zmq::message_t payload(data, bytes);
  Envelope envelope{static_cast<uint32_t>(kind), rank_, seq};
  std::lock_guard<std::mutex> lock(send_mutex_);
  auto it = dealers_.find(peer);
  if (it == dealers_.end()) {
    raise(Status::kLogic,
          "rank " + std::to_string(rank_) + " has no channel to rank " + std::to_string(peer));
  }
  try {
    zmq::message_t head(&envelope, sizeof(envelope));
    if (!it->second.send(head, zmq::send_flags::sndmore | zmq::send_flags::dontwait) ||
        !it->second.send(payload, zmq::send_flags::dontwait)) {
      raise(Status::kCommunication, "the channel to rank " + std::to_string(peer) + " is full");
    }
  } catch (const zmq::error_t& error) {
    raise(Status::kCommunication,
          "sending to rank " + std::to_string(peer) + " failed: " + error.what());
  }
}

void ZmqPeerMesh::send(int peer, MeshKind kind, uint64_t seq, const void* data, size_t bytes) {
  send_message(peer, kind, seq, data, bytes);
}

void ZmqPeerMesh::send_stream(int peer, uint64_t seq, const std::vector<ConstByteSpan>& segments) {
  const size_t total = total_bytes(segments);
  ByteSpanCursor<ConstByteSpan> cursor(segments);
  std::vector<std::byte> buffer(std::min(total, kStreamMessageBytes));
  for (size_t sent = 0; sent < total;) {
    size_t n = std::min(kStreamMessageBytes, total - sent);
    cursor.read(buffer.data(), n);
    send_message(peer, MeshKind::kData, seq, buffer.data(), n);
    sent += n;
  }
}

ZmqPeerMesh::Message ZmqPeerMesh::take(int peer, Deadline deadline, const HealthCheck& check) {
  std::unique_lock<std::mutex> lock(mailbox_mutex_);
  auto box = mailboxes_.find(peer);
  if (box == mailboxes_.end()) {
    raise(Status::kLogic,
          "rank " + std::to_string(rank_) + " has no channel from rank " + std::to_string(peer));
  }
  // Past 5 s the wait says whom it waits for (a peer node held up elsewhere, or stopped).
  base::WaitReporter reporter(deadline);
  const auto waited_for = [&] {
    return "rank " + std::to_string(peer) + " on another node (rank " + std::to_string(rank_) +
           " waits for its part of a collective)";
  };
  while (box->second.empty()) {
    const uint64_t seen = interrupts_;
    lock.unlock();
    try {
      check();  // throws on abort, a dead peer of this node, or the deadline
    } catch (const Error& error) {
      // A message that arrived meanwhile was sent before the failure: deliver it.
      lock.lock();
      if (!box->second.empty()) break;
      if (error.status() == Status::kTimeout) {
        raise(Status::kTimeout, "deadline passed while waiting for " + waited_for());
      }
      throw;
    }
    reporter.poll(waited_for);
    lock.lock();
    mailbox_cv_.wait_for(lock,
                         std::min<std::chrono::milliseconds>(
                             kWaitSlice, deadline.remaining() + std::chrono::milliseconds(1)),
                         [&] { return !box->second.empty() || interrupts_ != seen; });
  }
  Message message = std::move(box->second.front());
  box->second.pop_front();
  return message;
}

std::string ZmqPeerMesh::receive(int peer, MeshKind kind, uint64_t seq, Deadline deadline,
                                 const HealthCheck& check) {
  Message message = take(peer, deadline, check);
  if (message.kind != kind || message.seq != seq) {
    raise(Status::kCommunication, "collective channel out of step: rank " + std::to_string(rank_) +
                                      " expected " + kind_name(kind) + " #" + std::to_string(seq) +
                                      " from rank " + std::to_string(peer) + " but got " +
                                      kind_name(message.kind) + " #" + std::to_string(message.seq));
  }
  return message.payload.to_string();
}

void ZmqPeerMesh::receive_stream(int peer, uint64_t seq, const std::vector<ByteSpan>& segments,
                                 Deadline deadline, const HealthCheck& check) {
  const size_t total = total_bytes(segments);
  ByteSpanCursor<ByteSpan> cursor(segments);
  for (size_t received = 0; received < total;) {
    Message message = take(peer, deadline, check);
    if (message.kind != MeshKind::kData || message.seq != seq ||
        message.payload.size() > total - received) {
      raise(Status::kCommunication, "collective channel out of step: rank " +
                                        std::to_string(rank_) + " expected " +
                                        std::to_string(total - received) + " more bytes of #" +
                                        std::to_string(seq) + " from rank " + std::to_string(peer));
    }
    cursor.write(static_cast<const std::byte*>(message.payload.data()), message.payload.size());
    received += message.payload.size();
  }
}

void ZmqPeerMesh::send_abort(const std::string& reason) {
  quick_close_ = true;
  for (const auto& entry : dealers_) {
    const int peer = entry.first;
    try {
      send_message(peer, MeshKind::kAbort, 0, reason.data(), reason.size());
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kDebug, "abort notice to rank " << peer << " not sent: " << error.what());
    }
  }
}

void ZmqPeerMesh::interrupt() {
  std::lock_guard<std::mutex> lock(mailbox_mutex_);
  ++interrupts_;
  mailbox_cv_.notify_all();
}

}  // namespace memloom::host
