// The TCP Transport's wire protocol and the socket helpers both of its ends use.
//
// A request is one batch of ops against the serving process's exposed memory:
//   RequestHeader | OpDescriptor x op_count | the payloads of the write ops, in op order
// The server checks every op against its exposed ranges before touching memory, then answers
//   ResponseHeader | message (error only) | the payloads of the read ops, in op order
// and processes the ops in order while streaming (a read sees an earlier write of its batch).
// A refused batch (an op outside the exposed ranges) gets an error answer; the server still
// consumes its write payload, so the connection stays usable.
//
// Before its first request a connection proves both ends belong to one job (job_proof.h):
//   server -> requester   ServerHello     at accept: the server's nonce
//   requester -> server   RequesterProof  the requester's nonce and proof
//   server -> requester   ServerVerdict   status 0 and the server's proof, or a refusal (then
//                                         the server closes the connection)
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "memloom/deadline.h"

namespace memloom::host::wire {

inline constexpr uint32_t kRequestMagic = 0x4d4c5451;   // "MLTQ"
inline constexpr uint32_t kResponseMagic = 0x4d4c5452;  // "MLTR"
inline constexpr uint32_t kOpRead = 0;
inline constexpr uint32_t kOpWrite = 1;
// What a server accepts in one batch (the client stays well below).
inline constexpr uint32_t kMaxOpsPerBatch = 1 << 16;
inline constexpr uint64_t kMaxPayloadPerBatch = 64ull << 20;

struct RequestHeader {
  uint32_t magic;
  uint32_t op_count;
  uint64_t batch_id;
  uint64_t write_bytes;
  uint64_t read_bytes;
};

struct OpDescriptor {
  uint64_t remote_address;
  uint64_t bytes;
  uint32_t kind;  // kOpRead / kOpWrite
  uint32_t reserved;
};

struct ResponseHeader {
  uint32_t magic;
  uint32_t status;  // 0 = done, else a memloom::Status
  uint64_t batch_id;
  uint64_t message_bytes;
  uint64_t read_bytes;
};

struct ResponseTrailer {
  uint64_t batch_id;
};

inline constexpr uint32_t kHelloMagic = 0x4d4c5448;  // "MLTH"
inline constexpr uint32_t kHelloVersion = 1;

struct ServerHello {
  uint32_t magic;
  uint32_t version;
  uint8_t nonce[32];
};

struct RequesterProof {
  uint32_t magic;
  uint32_t reserved;
  uint8_t nonce[32];
  uint8_t proof[32];
};

struct ServerVerdict {
  uint32_t magic;
  uint32_t status;  // 0 = admitted, else a memloom::Status
  uint8_t proof[32];
};

struct Endpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
};

// Parses "tcp://IP:PORT" or "tcp://[IPv6]:PORT" (kInvalidInput if malformed).
Endpoint parse_tcp_url(const std::string& url);

// Waits until fd is ready for `events` (POLLIN/POLLOUT); false when the deadline passes. Throws
// kInterrupted when the caller's interrupt check says so (src/base/interrupt_check.h).
bool wait_ready(int fd, short events, Deadline deadline);

// Blocking-style exact I/O on a non-blocking socket. Return false on EOF, a socket error or the
// deadline; `error` (optional) receives a description.
bool read_exact(int fd, void* data, size_t bytes, Deadline deadline, std::string* error = nullptr);
bool write_exact(int fd, const void* data, size_t bytes, Deadline deadline,
                 std::string* error = nullptr);

// The same over a list of buffers (consumed as they are moved), many per system call.
bool read_iov_exact(int fd, std::vector<iovec>& iovs, Deadline deadline);
bool write_iov_exact(int fd, std::vector<iovec>& iovs, Deadline deadline);

void set_nonblocking(int fd);

// The requester's half of the job proof on a connected socket to the endpoint `peer` (its
// address, which the proofs name). Throws kCommunication when the peer is not of the job whose
// secret is `secret` (or speaks another protocol), kTimeout at the deadline.
void prove_membership(int fd, const std::string& peer, const hal::JobSecret& secret,
                      Deadline deadline);

// Prepares a data connection (both ends): TCP_NODELAY, and a congestion control that does not pace.
// A batch is one burst of megabytes on a connection that was idle a moment before; BBR, the
// default of some kernels, paces such a burst with its own timer (without an fq qdisc) at a rate
// learnt from the earlier small exchanges, which made a 1024 x 4 KiB batch over loopback twice as
// slow as the same bytes sent at the window's pace. So a connection that starts with a "bbr*"
// algorithm switches to cubic, else reno (always permitted). MEMLOOM_TCP_CONGESTION names the
// algorithm to use instead ("default": keep the system's).
void tune_connection(int fd);

}  // namespace memloom::host::wire
