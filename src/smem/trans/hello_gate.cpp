#include "src/smem/trans/hello_gate.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/smem/trans/wire_format.h"

namespace memloom::smem::trans {

HelloGate::HelloGate(std::string unique_id, std::string incarnation, const JobSecret& secret,
                     HelloLimits limits)
    : unique_id_(std::move(unique_id)),
      incarnation_(std::move(incarnation)),
      secret_(secret),
      limits_(limits) {}

void HelloGate::warn(WarningLimiter& limiter, const std::string& what) {
  std::string note;
  if (limiter.allow(&note))
    MEMLOOM_LOG(kWarn, "transfer server " << unique_id_ << ": " << what << note);
}

void HelloGate::admit(UniqueFd fd) {
  if (limits_.max_pending == 0) return;
  if (pending_.size() >= limits_.max_pending) {
    pending_.pop_front();
    warn(evicted_warnings_, std::to_string(limits_.max_pending) +
                                " connections are waiting to authenticate: dropping the oldest "
                                "(someone opens connections and stays silent)");
  }
  Pending pending;
  pending.fd = std::move(fd);
  pending.deadline = Clock::now() + limits_.deadline;
  pending.in.resize(sizeof(wire::FrameHeader));
  pending_.push_back(std::move(pending));
}

void HelloGate::poll_set(std::vector<pollfd>& fds) const {
  for (const Pending& pending : pending_) fds.push_back(pollfd{pending.fd.get(), POLLIN, 0});
}

std::vector<UniqueFd> HelloGate::advance(const pollfd* fds) {
  std::vector<UniqueFd> authenticated;
  const auto now = Clock::now();
  size_t index = 0;
  for (auto it = pending_.begin(); it != pending_.end(); ++index) {
    Verdict verdict = Verdict::kWaiting;
    if (fds[index].revents != 0) {
      try {
        verdict = step(*it);
      } catch (const std::exception& error) {
        // A system failure (no random bytes) costs this connection, not the server.
        MEMLOOM_LOG(kWarn, "transfer server " << unique_id_ << ": hello failed: " << error.what());
        verdict = Verdict::kDrop;
      }
    }
    if (verdict == Verdict::kWaiting && now >= it->deadline) {
      warn(deadline_warnings_, "dropping a connection that did not authenticate within " +
                                   std::to_string(limits_.deadline.count()) + " ms");
      verdict = Verdict::kDrop;
    }
    if (verdict == Verdict::kAuthenticated) authenticated.push_back(std::move(it->fd));
    it = verdict == Verdict::kWaiting ? std::next(it) : pending_.erase(it);
  }
  return authenticated;
}

int HelloGate::next_deadline_ms() const {
  if (pending_.empty()) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(pending_.front().deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

HelloGate::Verdict HelloGate::step(Pending& pending) {
  // Exactly the bytes due: anything after the proof belongs to the serving thread.
  const ssize_t got = ::recv(pending.fd.get(), pending.in.data() + pending.have,
                             pending.in.size() - pending.have, MSG_DONTWAIT);
  if (got == 0) return Verdict::kDrop;
  if (got < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Verdict::kWaiting
                                                                     : Verdict::kDrop;
  }
  pending.have += static_cast<size_t>(got);
  if (pending.have < pending.in.size()) return Verdict::kWaiting;
  return on_message(pending);
}

HelloGate::Verdict HelloGate::on_message(Pending& pending) {
  switch (pending.stage) {
    case Stage::kHelloHeader:
      return on_header(pending, static_cast<uint32_t>(wire::FrameKind::kHello), kNonceBytes + 1,
                       kNonceBytes + wire::kMaxHelloBytes, Stage::kHelloBody);
    case Stage::kHelloBody:
      return on_hello(pending);
    case Stage::kProofHeader:
      return on_header(pending, static_cast<uint32_t>(wire::FrameKind::kProof), kProofBytes,
                       kProofBytes, Stage::kProofBody);
    case Stage::kProofBody:
      return on_proof(pending);
  }
  return Verdict::kDrop;
}

HelloGate::Verdict HelloGate::on_header(Pending& pending, uint32_t kind, uint64_t min_bytes,
                                        uint64_t max_bytes, Stage next) {
  wire::FrameHeader header{};
  std::memcpy(&header, pending.in.data(), sizeof(header));
  if (header.magic == wire::kFrameMagicV1) {
    warn(protocol_warnings_,
         "dropping an initiator of TRANS protocol 1 (a memloom without authentication)");
    return Verdict::kDrop;
  }
  if (header.magic != wire::kFrameMagic || header.kind != kind || header.op_count != 0 ||
      header.payload_bytes < min_bytes || header.payload_bytes > max_bytes) {
    warn(protocol_warnings_, kind == static_cast<uint32_t>(wire::FrameKind::kProof)
                                 ? "dropping a connection that sent no proof of membership"
                                 : "dropping a connection that does not start with a hello");
    return Verdict::kDrop;
  }
  pending.stage = next;
  pending.in.assign(header.payload_bytes, 0);
  pending.have = 0;
  return Verdict::kWaiting;
}

HelloGate::Verdict HelloGate::on_hello(Pending& pending) {
  std::memcpy(pending.initiator_nonce.data(), pending.in.data(), kNonceBytes);
  const std::string wanted(pending.in.begin() + kNonceBytes, pending.in.end());
  if (wanted != unique_id_) {
    const std::string text =
        "this address now serves instance '" + unique_id_ + "', not '" + wanted + "'";
    reply(pending, static_cast<int32_t>(Status::kNotFound), {text.begin(), text.end()});
    return Verdict::kDrop;
  }
  pending.server_nonce = random_nonce();
  const Proof proof =
      prove(secret_, ProofRole::kServer, unique_id_, pending.initiator_nonce, pending.server_nonce);
  std::vector<uint8_t> payload(pending.server_nonce.begin(), pending.server_nonce.end());
  payload.insert(payload.end(), proof.begin(), proof.end());
  payload.insert(payload.end(), incarnation_.begin(), incarnation_.end());
  if (!reply(pending, 0, payload)) return Verdict::kDrop;
  pending.stage = Stage::kProofHeader;
  pending.in.assign(sizeof(wire::FrameHeader), 0);
  pending.have = 0;
  return Verdict::kWaiting;
}

HelloGate::Verdict HelloGate::on_proof(Pending& pending) {
  const Proof expected = prove(secret_, ProofRole::kInitiator, unique_id_, pending.initiator_nonce,
                               pending.server_nonce);
  if (!proof_matches(expected, pending.in.data())) {
    warn(proof_warnings_,
         "refusing a connection whose proof of membership is wrong (not of this job?)");
    const std::string text =
        "authentication failed: the proof does not match the job secret of '" + unique_id_ + "'";
    reply(pending, static_cast<int32_t>(Status::kCommunication), {text.begin(), text.end()});
    return Verdict::kDrop;
  }
  return Verdict::kAuthenticated;
}

bool HelloGate::reply(Pending& pending, int32_t status, const std::vector<uint8_t>& payload) {
  return send_hello_reply(pending.fd.get(), status, payload);
}

bool send_hello_reply(int fd, int32_t status, const std::vector<uint8_t>& payload) {
  wire::ReplyHeader header{wire::kReplyMagic, status, payload.size(), 0};
  std::vector<uint8_t> bytes(sizeof(header));
  std::memcpy(bytes.data(), &header, sizeof(header));
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  return sent == static_cast<ssize_t>(bytes.size());
}

}  // namespace memloom::smem::trans
