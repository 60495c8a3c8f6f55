#include "hw/host/tcp_transfer_pipeline.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/interrupt_check.h"

namespace memloom::host {
namespace {

// Large ops travel in pieces of this size, several in flight, so the peer copies one piece while
// the next is on the wire; small ops are packed into batches of up to this many bytes / ops.
constexpr uint64_t kPieceBytes = 2 << 20;
constexpr uint64_t kBatchPayloadBytes = 2 << 20;
constexpr size_t kBatchOps = 8192;
constexpr size_t kMaxBatchesInFlight = 4;
constexpr size_t kMaxIovPerCall = 64;

// A position in an iovec list.
struct IovCursor {
  std::vector<iovec>* list = nullptr;
  size_t index = 0;
  size_t offset = 0;

  bool done() const { return index >= list->size(); }
  // The next up-to-kMaxIovPerCall entries, starting at the current offset.
  size_t slice(iovec* out) const {
    size_t n = 0;
    for (size_t i = index; i < list->size() && n < kMaxIovPerCall; ++i, ++n) {
      out[n] = (*list)[i];
      if (i == index) {
        out[n].iov_base = static_cast<char*>(out[n].iov_base) + offset;
        out[n].iov_len -= offset;
      }
    }
    return n;
  }
  void advance(size_t bytes) {
    while (bytes > 0 && !done()) {
      size_t left = (*list)[index].iov_len - offset;
      size_t n = std::min(left, bytes);
      offset += n;
      bytes -= n;
      if (offset == (*list)[index].iov_len) {
        ++index;
        offset = 0;
      }
    }
    while (!done() && (*list)[index].iov_len == 0) ++index;
  }
};

void finish_batch(TransferBatch& batch, const std::vector<wire::OpDescriptor>& ops,
                  uint64_t write_bytes) {
  wire::RequestHeader header{wire::kRequestMagic, static_cast<uint32_t>(ops.size()), batch.id,
                             write_bytes, batch.read_bytes};
  batch.head.resize(sizeof(header) + ops.size() * sizeof(wire::OpDescriptor));
  std::memcpy(batch.head.data(), &header, sizeof(header));
  std::memcpy(batch.head.data() + sizeof(header), ops.data(),
              ops.size() * sizeof(wire::OpDescriptor));
  batch.send.front() = iovec{batch.head.data(), batch.head.size()};
}

// Points the batch's staged pieces into staging buffer `slot` and copies its device writes there.
void stage_batch(TransferBatch& batch, StagingBuffers& staging, size_t slot, Deadline deadline) {
  if (batch.staged.empty()) return;
  if (staging.buffers.size() <= slot) staging.buffers.resize(slot + 1);
  if (staging.buffers[slot].data() == nullptr) {
    staging.buffers[slot] = StagingBuffer(*staging.staging, kBatchPayloadBytes);
  }
  std::byte* buffer = staging.buffers[slot].data();
  std::vector<StagingCopy> writes;
  for (const StagedPiece& piece : batch.staged) {
    std::byte* host = buffer + piece.buffer_offset;
    if (piece.write) {
      writes.push_back({host, piece.memory, piece.bytes});
      batch.send[piece.iov].iov_base = host;
    } else {
      batch.receive[piece.iov].iov_base = host;
    }
  }
  if (!writes.empty()) staging.staging->copy_all(writes, deadline);
}

// After the batch's answer arrived: its device reads from the staging buffer to their place.
void unstage_batch(const TransferBatch& batch, StagingBuffers& staging, Deadline deadline) {
  std::vector<StagingCopy> reads;
  for (const StagedPiece& piece : batch.staged) {
    if (!piece.write)
      reads.push_back({piece.memory, batch.receive[piece.iov].iov_base, piece.bytes});
  }
  if (!reads.empty()) staging.staging->copy_all(reads, deadline);
}

[[noreturn]] void connection_failed(const std::string& peer, const std::string& why) {
  raise(Status::kCommunication, "transfer to " + peer + " failed: " + why);
}

}  // namespace

std::vector<TransferBatch> plan_transfer(const std::vector<hal::TransferOp>& ops,
                                         const BufferStaging* staging) {
  std::vector<TransferBatch> batches;
  std::vector<wire::OpDescriptor> descriptors;
  uint64_t payload = 0, write_bytes = 0;
  auto open_batch = [&] {
    batches.emplace_back();
    batches.back().id = batches.size();
    batches.back().send.push_back(iovec{});  // the head, filled in when the batch closes
    descriptors.clear();
    payload = write_bytes = 0;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const hal::TransferOp& op = ops[i];
    if (op.bytes == 0) continue;
    MEMLOOM_CHECK_ARG(op.local_address != nullptr,
                      "transfer op " + std::to_string(i) + " has a null local address");
    MEMLOOM_CHECK_ARG(op.direction == hal::TransferOp::Direction::kRead ||
                          op.direction == hal::TransferOp::Direction::kWrite,
                      "transfer op " + std::to_string(i) + " has an unknown direction");
    MEMLOOM_CHECK_ARG(op.remote_address + op.bytes > op.remote_address,
                      "transfer op " + std::to_string(i) + " wraps around the address space");
    const bool write = op.direction == hal::TransferOp::Direction::kWrite;
    auto* local = static_cast<std::byte*>(op.local_address);
    const bool staged = staging != nullptr && staging->needs_staging(local);
    for (uint64_t done = 0; done < op.bytes;) {
      const uint64_t n = std::min(kPieceBytes, op.bytes - done);
      if (batches.empty() || descriptors.size() == kBatchOps ||
          (payload > 0 && payload + n > kBatchPayloadBytes)) {
        if (!batches.empty()) finish_batch(batches.back(), descriptors, write_bytes);
        open_batch();
      }
      TransferBatch& batch = batches.back();
      descriptors.push_back(
          {op.remote_address + done, n, write ? wire::kOpWrite : wire::kOpRead, 0});
      // A staged piece's iovec is filled in by stage_batch; never the device address itself.
      iovec piece{staged ? nullptr : local + done, static_cast<size_t>(n)};
      std::vector<iovec>& list = write ? batch.send : batch.receive;
      if (staged) {
        batch.staged.push_back({local + done, static_cast<size_t>(payload), static_cast<size_t>(n),
                                write, list.size()});
      }
      list.push_back(piece);
      (write ? write_bytes : batch.read_bytes) += n;
      payload += n;
      done += n;
    }
  }
  if (!batches.empty()) finish_batch(batches.back(), descriptors, write_bytes);
  return batches;
}

void run_transfer(int fd, std::vector<TransferBatch>& batches, StagingBuffers& staging,
                  const std::string& peer, Deadline deadline) {
  size_t sent = 0;      // batches completely sent
  size_t answered = 0;  // batches completely answered
  size_t send_limit = batches.size();
  IovCursor sending;
  bool sending_started = false;
  // The answer being received.
  enum class Phase { kHeader, kMessage, kPayload, kTrailer } phase = Phase::kHeader;
  wire::ResponseHeader response{};
  size_t header_got = 0;
  wire::ResponseTrailer trailer{};
  size_t trailer_got = 0;
  std::string message;
  size_t message_got = 0;
  IovCursor receiving;
  Status refused_status = Status::kSuccess;
  std::string refusal;

  while (answered < sent || sent < send_limit) {
    const bool want_send = sent < send_limit && sent - answered < kMaxBatchesInFlight;
    base::throw_if_interrupted();
    pollfd p{fd, static_cast<short>(POLLIN | (want_send ? POLLOUT : 0)), 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout_ms(base::interruptible_slice_ms(1000)));
    if (rc < 0 && errno != EINTR) connection_failed(peer, std::strerror(errno));
    if (rc <= 0) {
      if (deadline.expired()) {
        raise(Status::kTimeout, "transfer to " + peer + " timed out with " +
                                    std::to_string(batches.size() - answered) + " of " +
                                    std::to_string(batches.size()) + " batches unanswered");
      }
      continue;
    }
    if (want_send && (p.revents & POLLOUT)) {
      if (!sending_started) {
        // At most kMaxBatchesInFlight batches, consecutive ones, are under way: their slots differ.
        stage_batch(batches[sent], staging, sent % kMaxBatchesInFlight, deadline);
        sending = IovCursor{&batches[sent].send, 0, 0};
        sending_started = true;
      }
      iovec slice[kMaxIovPerCall];
      msghdr header{};
      header.msg_iov = slice;
      header.msg_iovlen = sending.slice(slice);
      ssize_t n = ::sendmsg(fd, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        connection_failed(peer, std::strerror(errno));
      }
      if (n > 0) sending.advance(static_cast<size_t>(n));
      if (sending.done()) {
        ++sent;
        sending_started = false;
      }
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0 || answered >= sent) continue;
    // Receive as much of the current answer as is available.
    while (answered < sent) {
      ssize_t n = 0;
      if (phase == Phase::kHeader) {
        n = ::recv(fd, reinterpret_cast<char*>(&response) + header_got,
                   sizeof(response) - header_got, MSG_DONTWAIT);
      } else if (phase == Phase::kMessage) {
        n = ::recv(fd, message.data() + message_got, message.size() - message_got, MSG_DONTWAIT);
      } else if (phase == Phase::kPayload) {
        iovec slice[kMaxIovPerCall];
        msghdr header{};
        header.msg_iov = slice;
        header.msg_iovlen = receiving.slice(slice);
        n = ::recvmsg(fd, &header, MSG_DONTWAIT);
      } else {
        n = ::recv(fd, reinterpret_cast<char*>(&trailer) + trailer_got,
                   sizeof(trailer) - trailer_got, MSG_DONTWAIT);
      }
      if (n == 0) connection_failed(peer, "the peer closed the connection");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        connection_failed(peer, std::strerror(errno));
      }
      bool batch_done = false;
      if (phase == Phase::kHeader) {
        header_got += static_cast<size_t>(n);
        if (header_got < sizeof(response)) continue;
        const TransferBatch& batch = batches[answered];
        if (response.magic != wire::kResponseMagic || response.batch_id != batch.id ||
            response.message_bytes > 4096 ||
            (response.status == 0 && response.read_bytes != batch.read_bytes)) {
          connection_failed(peer, "malformed answer");
        }
        if (response.status != 0) {
          message.assign(response.message_bytes, '\0');
          message_got = 0;
          phase = Phase::kMessage;
          // Stop after the batch being sent now: the peer must still receive all of it.
          send_limit = sent + (sending_started ? 1 : 0);
          batch_done = response.message_bytes == 0;
        } else {
          receiving = IovCursor{&batches[answered].receive, 0, 0};
          receiving.advance(0);
          phase = receiving.done() ? Phase::kTrailer : Phase::kPayload;
          trailer_got = 0;
        }
      } else if (phase == Phase::kMessage) {
        message_got += static_cast<size_t>(n);
        batch_done = message_got == message.size();
      } else if (phase == Phase::kPayload) {
        receiving.advance(static_cast<size_t>(n));
        if (receiving.done()) phase = Phase::kTrailer;
      } else {
        trailer_got += static_cast<size_t>(n);
        if (trailer_got == sizeof(trailer)) {
          if (trailer.batch_id != batches[answered].id) connection_failed(peer, "malformed answer");
          batch_done = true;
        }
      }
      if (!batch_done) continue;
      if (response.status != 0 && refused_status == Status::kSuccess) {
        refused_status = static_cast<Status>(response.status);
        refusal = message;
      }
      if (response.status == 0) unstage_batch(batches[answered], staging, deadline);
      ++answered;
      header_got = 0;
      phase = Phase::kHeader;
    }
  }
  if (refused_status != Status::kSuccess) {
    raise(refused_status, "transfer to " + peer + " refused: " + refusal);
  }
}

}  // namespace memloom::host
