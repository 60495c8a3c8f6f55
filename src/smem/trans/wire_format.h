// The TRANS data protocol between an initiator and a peer's data server, over one TCP connection.
//
//   initiator: FrameHeader, op_count x OpDescriptor, [write: the ops' bytes, in order]
//   server:    ReplyHeader, [status ok and read: the ops' bytes | failure: message text]
//
// An initiator sends frames back to back without waiting for replies (the server handles them in
// order), so large transfers stream at the wire's pace and many small ops share one frame.
//
// A connection starts with a mutual challenge-response (job_auth.h), before any read or write:
//   initiator: FrameHeader kHello, its nonce, the uniqueId it meant to reach
//   server:    ReplyHeader, [ok: its nonce, its proof, its incarnation | failure: message text]
//   initiator: FrameHeader kProof, its proof
//   server:    ReplyHeader, [failure: message text, then it closes]
// Version 2 of the protocol (the authenticated hello) has new magics: peers of version 1 and 2 drop
// each other's first frame instead of misreading it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memloom::smem::trans::wire {

inline constexpr uint32_t kFrameMagic = 0x3254'4c4d;  // "MLT2"
inline constexpr uint32_t kReplyMagic = 0x3252'4c4d;  // "MLR2"
// Version 1's frame magic ("MLTR"): recognised only to say why such a peer is dropped.
inline constexpr uint32_t kFrameMagicV1 = 0x5254'4c4d;

enum class FrameKind : uint32_t { kHello = 1, kWrite = 2, kRead = 3, kProof = 4 };

// Limits of one frame: bounded descriptor memory on the server, and bounded time for which one
// frame keeps the connection (so replies, and failures, come back promptly).
inline constexpr uint32_t kMaxOpsPerFrame = 1024;
inline constexpr uint64_t kMaxFrameBytes = 16ull << 20;
// Ops larger than this are cut into pieces (also bounds how long one copy holds a region).
inline constexpr uint64_t kMaxPieceBytes = 16ull << 20;
inline constexpr uint64_t kMaxHelloBytes = 512;
inline constexpr uint64_t kMaxMessageBytes = 4096;

struct FrameHeader {
  uint32_t magic;
  uint32_t kind;      // FrameKind
  uint32_t op_count;  // OpDescriptors that follow
  uint32_t reserved;
  uint64_t payload_bytes;  // hello: nonce + uniqueId; proof: the proof; write/read: sum of op bytes
  uint64_t sequence;       // echoed by the reply
};

struct OpDescriptor {
  uint64_t remote_address;
  uint64_t bytes;
};

struct ReplyHeader {
  uint32_t magic;
  int32_t status;          // memloom::Status; 0 = success
  uint64_t payload_bytes;  // the read bytes, or the failure message length
  uint64_t sequence;
};

static_assert(sizeof(FrameHeader) == 32 && sizeof(OpDescriptor) == 16 && sizeof(ReplyHeader) == 24);

}  // namespace memloom::smem::trans::wire
