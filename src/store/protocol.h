// The config store wire protocol (version 1).
//
// Every message is one frame: a fixed 24-byte header followed by `payload_bytes` of payload.
// All integers are little-endian.
//
//   offset size field
//   0      4    magic          0x54534C4D, i.e. the bytes "MLST"; anything else is garbage
//   4      2    version        kVersion; a frame of any other version closes the connection
//   6      2    type           MessageType; requests 1..12, replies = request | kReplyBit,
//                              kEvent and kError from the server
//   8      8    request_id     chosen by the client, echoed in the reply; 0 in kEvent
//   16     4    payload_bytes  the length of what follows
//   20     4    reserved       must be 0
//
// Payload fields are written back to back, each with an explicit length:
//   u8, u32, u64, i64     fixed width
//   str                   u32 length + that many bytes (no terminator)
// A reader that runs past the payload, or finds bytes left after the last field, rejects it.
//
// Requests and their replies (reply payloads after "->"):
//   kHello          i64 rank, str group, u64 heartbeat_timeout_ms (0: the server's default),
//                   [str job_namespace [str namespace_key]] (optional; absent = "")
//                   -> u16 version, u64 max_frame_bytes, u64 max_key_bytes, u64 max_value_bytes
//                   It must be the first frame of a connection. Every key, prefix and group name
//                   the connection sends is confined to its job namespace on the server: clients
//                   of other namespaces cannot read, write, watch or remove it, and an empty
//                   prefix removes only the caller's own keys. namespace_key (namespace_key.h,
//                   kNamespaceKeyBytes or empty) proves the client knows the job's secret: the
//                   first hello of a namespace binds it to its key (or to none) until the
//                   namespace ends, and a hello with another key (or none, or one where the
//                   namespace has none) is answered with kError (kInvalidValue); the connection
//                   stays without a hello. Clients without a key omit the field, so servers from
//                   before it still take them. Both fields are optional additions, not a new
//                   version: an old client's hello means "namespace "" (or the one named), no key".
//   kHeartbeat      (empty) -> (empty)
//   kSet            str key, str value -> (empty)
//   kGet            str key, u64 timeout_ms -> u8 found, str value   (parked up to timeout_ms)
//   kAdd            str key, i64 delta -> i64 new_value
//   kCompareAndSwap str key, str expected, str desired, u8 expected_missing
//                   -> u8 swapped, u8 current_exists, str current
//   kAppend         str key, str value -> u64 new_length
//   kRemove         str key -> u8 existed
//   kRemovePrefix   str prefix -> u64 removed
//   kWatchKey       u64 watch_id, str key -> (empty)
//   kWatchRankDown  u64 watch_id, str group -> (empty)
//   kUnwatch        u64 watch_id -> (empty)
// Server-initiated and error frames:
//   kEvent          u64 watch_id, u8 kind (WatchEventKind), str key, str value, i64 rank, str group
//   kError          u32 status (memloom::Status), str message — the reply to a well-formed
//                   request the server refuses (key too long, value not an integer...)
//
// Limits (ServerOptions): a frame larger than max_frame_bytes (header included) closes the
// connection as soon as its header is read. Keys and group names longer than max_key_bytes and
// values longer than max_value_bytes (also the result of append) are refused with kError, and the
// connection stays open; so are writes that would grow the store past its max_total_bytes
// (kOutOfMemory) and parked gets or watches beyond max_waiters_per_connection (kInvalidValue).
// Values can grow past max_frame_bytes through append, so the largest frame the server sends is
// bounded by max_reply_bytes() of the hello reply's limits.
//
// Malformed frames (bad magic, wrong version, unknown type, nonzero reserved field, truncated or
// over-long payload, a first frame that is not kHello) close that connection only.
//
// Liveness: the server closes a connection from which nothing (no header, no 1 MiB payload
// chunk) arrived within its heartbeat timeout: ServerOptions.heartbeat_timeout until the hello,
// then the hello's heartbeat_timeout_ms if nonzero. Closing it for any reason sends kRankDown
// (rank and group from its hello) to the watchers of its group. The client sends kHeartbeat
// every heartbeat_interval and treats a server that sent nothing for heartbeat_timeout +
// heartbeat_interval as gone.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace memloom::store::protocol {

constexpr uint32_t kMagic = 0x54534C4D;  // "MLST" in little-endian byte order
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderBytes = 24;
constexpr uint16_t kReplyBit = 0x8000;

enum class MessageType : uint16_t {
  kHello = 1,
  kHeartbeat = 2,
  kSet = 3,
  kGet = 4,
  kAdd = 5,
  kCompareAndSwap = 6,
  kAppend = 7,
  kRemove = 8,
  kRemovePrefix = 9,
  kWatchKey = 10,
  kWatchRankDown = 11,
  kUnwatch = 12,
  kEvent = 0x4000,
  kError = 0x4001,
};

bool is_request(uint16_t type);
constexpr uint16_t reply_type(MessageType request) {
  return static_cast<uint16_t>(static_cast<uint16_t>(request) | kReplyBit);
}
const char* type_name(uint16_t type);

struct FrameHeader {
  uint16_t version = kVersion;
  uint16_t type = 0;
  uint64_t request_id = 0;
  uint32_t payload_bytes = 0;
};

using HeaderBytes = std::array<uint8_t, kHeaderBytes>;

// Validates magic, version and reserved field and that the whole frame fits in max_frame_bytes.
// Throws memloom::Error(kCommunication) describing the violation.
FrameHeader decode_header(const HeaderBytes& bytes, size_t max_frame_bytes);

// The server's limits, announced in the hello reply so the client can refuse oversized requests
// itself (kInvalidInput) instead of being disconnected.
struct Limits {
  uint64_t max_frame_bytes = 0;
  uint64_t max_key_bytes = 0;
  uint64_t max_value_bytes = 0;
  // The largest frame a server with these limits sends (an event: key, value and group).
  uint64_t max_reply_bytes() const {
    return kHeaderBytes + 64 + 2 * max_key_bytes + max_value_bytes;
  }
};

// Builds one frame: header first, fields appended; finish() fills in the payload length.
class FrameWriter {
 public:
  FrameWriter(uint16_t type, uint64_t request_id);
  FrameWriter(MessageType type, uint64_t request_id)
      : FrameWriter(static_cast<uint16_t>(type), request_id) {}
  FrameWriter& u8(uint8_t value);
  FrameWriter& u16(uint16_t value);
  FrameWriter& u32(uint32_t value);
  FrameWriter& u64(uint64_t value);
  FrameWriter& i64(int64_t value) { return u64(static_cast<uint64_t>(value)); }
  FrameWriter& str(std::string_view value);
  // Returns the frame bytes; the writer is empty afterwards.
  std::string finish();

 private:
  std::string bytes_;
};

// Reads fields from a payload; every read checks the remaining length. Violations throw
// memloom::Error(kCommunication) ("malformed <what> frame: ...").
class PayloadReader {
 public:
  PayloadReader(std::string_view payload, const char* what) : rest_(payload), what_(what) {}
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  bool boolean();
  std::string str();
  // True when every byte was read (for optional trailing fields).
  bool at_end() const { return rest_.empty(); }
  // Throws if bytes are left over.
  void finish();

 private:
  std::string_view take(size_t bytes, const char* field);
  [[noreturn]] void malformed(const std::string& why) const;
  std::string_view rest_;
  const char* what_;
};

// The hello, the first frame of every connection (see kHello above).
constexpr size_t kMaxJobNamespaceBytes = 256;
constexpr size_t kNamespaceKeyBytes = 32;  // HMAC-SHA256
struct Hello {
  int64_t rank = -1;
  std::string group;
  uint64_t heartbeat_timeout_ms = 0;
  std::string job_namespace;
  std::string namespace_key;  // empty: none
};
std::string encode_hello(uint64_t request_id, const Hello& hello);
// Reads the rest of a hello payload; throws kCommunication on a malformed one, a group name longer
// than max_group_bytes, or a namespace or key of the wrong size.
Hello read_hello(PayloadReader& reader, size_t max_group_bytes);

}  // namespace memloom::store::protocol
