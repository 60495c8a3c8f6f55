#include "src/smem/trans/tcp_channel.h"

#include <poll.h>

#include <cstring>
#include <optional>

#include "memloom/error.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/wire_format.h"

namespace memloom::smem::trans {
namespace {

constexpr size_t kMaxIdleConnections = 16;
// Bytes staged at once: a few frames, so the pipeline still streams within a window.
constexpr uint64_t kStagingWindowBytes = 4 * wire::kMaxFrameBytes;

// A frame of the pipeline: pieces [first, first+count) and its header and descriptors.
struct Frame {
  size_t first = 0;
  size_t count = 0;
  uint64_t bytes = 0;
  std::vector<uint8_t> meta;
};

std::vector<Frame> plan_frames(Direction direction, const std::vector<Piece>& pieces) {
  std::vector<Frame> frames;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (frames.empty() || frames.back().count == wire::kMaxOpsPerFrame ||
        frames.back().bytes + pieces[i].bytes > wire::kMaxFrameBytes) {
      frames.push_back(Frame{i, 0, 0, {}});
    }
    frames.back().count++;
    frames.back().bytes += pieces[i].bytes;
  }
  for (size_t f = 0; f < frames.size(); ++f) {
    Frame& frame = frames[f];
    wire::FrameHeader header{
        wire::kFrameMagic,
        static_cast<uint32_t>(direction == Direction::kWrite ? wire::FrameKind::kWrite
                                                             : wire::FrameKind::kRead),
        static_cast<uint32_t>(frame.count),
        0,
        frame.bytes,
        f};
    frame.meta.resize(sizeof(header) + frame.count * sizeof(wire::OpDescriptor));
    std::memcpy(frame.meta.data(), &header, sizeof(header));
    auto* ops = reinterpret_cast<wire::OpDescriptor*>(frame.meta.data() + sizeof(header));
    for (size_t i = 0; i < frame.count; ++i) {
      ops[i] = wire::OpDescriptor{pieces[frame.first + i].remote, pieces[frame.first + i].bytes};
    }
  }
  return frames;
}

std::vector<iovec> local_buffers(const std::vector<Piece>& pieces, size_t first, size_t count) {
  std::vector<iovec> iovs;
  iovs.reserve(count);
  for (size_t i = first; i < first + count; ++i)
    iovs.push_back(iovec{pieces[i].local, pieces[i].bytes});
  return iovs;
}

// A status from the wire, trusted only if it is one memloom knows.
Status remote_status(int32_t status) {
  if (status <= 0 || status > static_cast<int32_t>(Status::kDevice)) return Status::kCommunication;
  return static_cast<Status>(status);
}

[[noreturn]] void protocol_error(const std::string& what) {
  raise(Status::kCommunication, "the peer broke the transfer protocol: " + what);
}

}  // namespace

TcpChannel::TcpChannel(EndpointAddress peer, const JobSecret& secret,
                       std::shared_ptr<StreamPool> staging)
    : peer_(std::move(peer)), secret_(secret), staging_(std::move(staging)) {}

void TcpChannel::run(Direction direction, const std::vector<Piece>& pieces, Deadline deadline) {
  if (pieces.empty()) return;
  try {
    UniqueFd connection = checkout(deadline);
    if (staging_) {
      staged(connection.get(), direction, pieces, deadline);
    } else {
      pipeline(connection.get(), direction, pieces, deadline);
    }
    checkin(std::move(connection));
  } catch (const Error& error) {
    // The connection (closed by now) may hold half a frame: it is never reused after a failure.
    raise(error.status(), "peer '" + peer_.text + "': " + error.what());
  }
}

UniqueFd TcpChannel::checkout(Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!idle_.empty()) {
      UniqueFd connection = std::move(idle_.back());
      idle_.pop_back();
      // An idle connection has nothing to read: data or a hang-up means the peer closed it (it
      // exited or restarted), so it is dropped rather than failing the transfer.
      pollfd probe{connection.get(), POLLIN | POLLRDHUP, 0};
      if (::poll(&probe, 1, 0) == 0) return connection;
    }
  }
  UniqueFd connection = connect_to(peer_, deadline);
  authenticate(connection.get(), deadline);
  return connection;
}

void TcpChannel::authenticate(int fd, Deadline deadline) {
  // A peer that closes now refused us: an older protocol, a full server, or no thread to serve.
  auto receive_reply = [&](wire::ReplyHeader& reply, std::string& payload) {
    try {
      recv_exact(fd, &reply, sizeof(reply), deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kCommunication) throw;
      raise(Status::kCommunication,
            std::string("the peer closed the connection during the authenticated hello (") +
                error.what() +
                "): it is not a TRANS instance of this memloom version, or it refused the "
                "connection (see its log)");
    }
    if (reply.magic != wire::kReplyMagic)
      protocol_error("bad greeting (is this a memloom TRANS instance of this version?)");
    if (reply.payload_bytes > wire::kMaxMessageBytes) protocol_error("oversized greeting");
    payload.assign(reply.payload_bytes, '\0');
    recv_exact(fd, payload.data(), payload.size(), deadline);
  };
  const Nonce nonce = random_nonce();
  wire::FrameHeader hello{wire::kFrameMagic,
                          static_cast<uint32_t>(wire::FrameKind::kHello),
                          0,
                          0,
                          kNonceBytes + peer_.text.size(),
                          0};
  IovCursor greeting({iovec{&hello, sizeof(hello)},
                      iovec{const_cast<uint8_t*>(nonce.data()), nonce.size()},
                      iovec{const_cast<char*>(peer_.text.data()), peer_.text.size()}});
  while (!greeting.done()) {
    if (send_some(fd, greeting) == 0 && !base::wait_ready(fd, POLLOUT, deadline))
      raise(Status::kTimeout, "timed out sending the hello");
  }
  wire::ReplyHeader reply{};
  std::string payload;
  receive_reply(reply, payload);
  if (reply.status != 0) raise(remote_status(reply.status), payload);
  if (payload.size() < kNonceBytes + kProofBytes) protocol_error("short greeting");
  Nonce server_nonce{};
  std::memcpy(server_nonce.data(), payload.data(), kNonceBytes);
  const Proof expected = prove(secret_, ProofRole::kServer, peer_.text, nonce, server_nonce);
  if (!proof_matches(expected, reinterpret_cast<const uint8_t*>(payload.data()) + kNonceBytes)) {
    raise(Status::kCommunication,
          "it could not prove that it belongs to this job (its TRANS job secret differs: an "
          "instance of another job, or of another config store, on this address?)");
  }
  const Proof proof = prove(secret_, ProofRole::kInitiator, peer_.text, nonce, server_nonce);
  wire::FrameHeader proof_header{
      wire::kFrameMagic, static_cast<uint32_t>(wire::FrameKind::kProof), 0, 0, kProofBytes, 0};
  send_exact(fd, &proof_header, sizeof(proof_header), deadline);
  send_exact(fd, proof.data(), proof.size(), deadline);
  receive_reply(reply, payload);
  if (reply.status != 0) {
    raise(Status::kCommunication, "it refused the connection: " + payload);
  }
}

void TcpChannel::checkin(UniqueFd connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(connection));
}

void TcpChannel::pipeline(int fd, Direction direction, const std::vector<Piece>& pieces,
                          Deadline deadline) {
  std::vector<Frame> frames = plan_frames(direction, pieces);
  std::vector<iovec> outgoing;
  for (const Frame& frame : frames) {
    outgoing.push_back(iovec{const_cast<uint8_t*>(frame.meta.data()), frame.meta.size()});
    if (direction == Direction::kWrite) {
      auto data = local_buffers(pieces, frame.first, frame.count);
      outgoing.insert(outgoing.end(), data.begin(), data.end());
    }
  }
  IovCursor send(std::move(outgoing));

  // Replies are consumed while frames are still going out, so neither side ever waits on a full
  // socket buffer: the pipeline cannot deadlock whatever the batch's shape.
  enum class Expect { kHeader, kData, kMessage } expect = Expect::kHeader;
  wire::ReplyHeader reply{};
  std::string message;
  std::optional<IovCursor> receive(IovCursor({iovec{&reply, sizeof(reply)}}));
  size_t frame_index = 0;
  while (frame_index < frames.size()) {
    short events = POLLIN | (send.done() ? 0 : POLLOUT);
    if (wait_for(fd, events, deadline) == WaitResult::kTimeout) {
      raise(Status::kTimeout,
            "the transfer did not complete before the deadline (is the peer stalled?)");
    }
    if (!send.done()) send_some(fd, send);
    while (frame_index < frames.size() && recv_some(fd, *receive) > 0) {
      if (!receive->done()) continue;
      const Frame& frame = frames[frame_index];
      bool frame_done = false;
      switch (expect) {
        case Expect::kHeader:
          if (reply.magic != wire::kReplyMagic || reply.sequence != frame_index)
            protocol_error("reply out of order");
          if (reply.status != 0) {
            if (reply.payload_bytes == 0 || reply.payload_bytes > wire::kMaxMessageBytes) {
              raise(remote_status(reply.status), "the peer refused the transfer");
            }
            message.assign(reply.payload_bytes, '\0');
            receive.emplace(std::vector<iovec>{iovec{message.data(), message.size()}});
            expect = Expect::kMessage;
          } else if (direction == Direction::kRead) {
            if (reply.payload_bytes != frame.bytes) protocol_error("read reply of the wrong size");
            receive.emplace(local_buffers(pieces, frame.first, frame.count));
            expect = Expect::kData;
          } else {
            frame_done = true;
          }
          break;
        case Expect::kData:
          frame_done = true;
          break;
        case Expect::kMessage:
          raise(remote_status(reply.status), message);
      }
      if (frame_done) {
        ++frame_index;
        receive.emplace(std::vector<iovec>{iovec{&reply, sizeof(reply)}});
        expect = Expect::kHeader;
      }
    }
  }
}

// Windows of pieces go through one host buffer: gathered from local memory before a write is
// sent, scattered to it after a read arrived.
void TcpChannel::staged(int fd, Direction direction, const std::vector<Piece>& pieces,
                        Deadline deadline) {
  StreamPool::Lease copies(*staging_);
  uint64_t total = 0;
  for (const auto& piece : pieces) total += piece.bytes;
  std::vector<char> buffer(std::min(total, kStagingWindowBytes));
  std::vector<Piece> window;
  for (size_t begin = 0; begin < pieces.size();) {
    window.clear();
    uint64_t offset = 0;
    size_t end = begin;
    while (end < pieces.size() && offset + pieces[end].bytes <= buffer.size()) {
      window.push_back(Piece{pieces[end].remote, buffer.data() + offset, pieces[end].bytes});
      offset += pieces[end].bytes;
      ++end;
    }
    if (direction == Direction::kWrite) {
      for (size_t i = begin; i < end; ++i)
        copies.copy(window[i - begin].local, pieces[i].local, pieces[i].bytes);
      copies.finish(deadline);
      pipeline(fd, direction, window, deadline);
    } else {
      pipeline(fd, direction, window, deadline);
      for (size_t i = begin; i < end; ++i)
        copies.copy(pieces[i].local, window[i - begin].local, pieces[i].bytes);
      copies.finish(deadline);
    }
    begin = end;
  }
}

}  // namespace memloom::smem::trans
