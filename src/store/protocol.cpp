#include "src/store/protocol.h"

#include "memloom/error.h"

namespace memloom::store::protocol {
namespace {

template <typename T>
void put_le(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

template <typename T>
T get_le(const uint8_t* bytes) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(bytes[i]) << (8 * i);
  return value;
}

template <typename T>
void store_le(char* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

[[noreturn]] void violation(const std::string& why) {
  raise(Status::kCommunication, "store protocol violation: " + why);
}

}  // namespace

bool is_request(uint16_t type) {
  return type >= static_cast<uint16_t>(MessageType::kHello) &&
         type <= static_cast<uint16_t>(MessageType::kUnwatch);
}

const char* type_name(uint16_t type) {
  bool reply = (type & kReplyBit) != 0;
  switch (static_cast<MessageType>(type & ~kReplyBit)) {
    case MessageType::kHello:
      return reply ? "hello reply" : "hello";
    case MessageType::kHeartbeat:
      return reply ? "heartbeat reply" : "heartbeat";
    case MessageType::kSet:
      return reply ? "set reply" : "set";
    case MessageType::kGet:
      return reply ? "get reply" : "get";
    case MessageType::kAdd:
      return reply ? "add reply" : "add";
    case MessageType::kCompareAndSwap:
      return reply ? "compare-and-swap reply" : "compare-and-swap";
    case MessageType::kAppend:
      return reply ? "append reply" : "append";
    case MessageType::kRemove:
      return reply ? "remove reply" : "remove";
    case MessageType::kRemovePrefix:
      return reply ? "remove-prefix reply" : "remove-prefix";
    case MessageType::kWatchKey:
      return reply ? "watch-key reply" : "watch-key";
    case MessageType::kWatchRankDown:
      return reply ? "watch-rank-down reply" : "watch-rank-down";
    case MessageType::kUnwatch:
      return reply ? "unwatch reply" : "unwatch";
    case MessageType::kEvent:
      return reply ? "unknown" : "event";
    case MessageType::kError:
      return reply ? "unknown" : "error";
  }
  return "unknown";
}

FrameHeader decode_header(const HeaderBytes& bytes, size_t max_frame_bytes) {
  const uint8_t* p = bytes.data();
  uint32_t magic = get_le<uint32_t>(p);
  if (magic != kMagic) violation("bad magic (not a memloom store frame)");
  FrameHeader header;
  header.version = get_le<uint16_t>(p + 4);
  if (header.version != kVersion) {
    violation("protocol version " + std::to_string(header.version) + " (this side speaks " +
              std::to_string(kVersion) + ")");
  }
  header.type = get_le<uint16_t>(p + 6);
  header.request_id = get_le<uint64_t>(p + 8);
  header.payload_bytes = get_le<uint32_t>(p + 16);
  if (get_le<uint32_t>(p + 20) != 0) violation("the reserved header field is not zero");
  if (header.payload_bytes + kHeaderBytes > max_frame_bytes) {
    violation("a frame of " + std::to_string(header.payload_bytes + kHeaderBytes) +
              " bytes exceeds the limit of " + std::to_string(max_frame_bytes));
  }
  return header;
}

FrameWriter::FrameWriter(uint16_t type, uint64_t request_id) {
  bytes_.reserve(64);
  put_le<uint32_t>(bytes_, kMagic);
  put_le<uint16_t>(bytes_, kVersion);
  put_le<uint16_t>(bytes_, type);
  put_le<uint64_t>(bytes_, request_id);
  put_le<uint32_t>(bytes_, 0);  // payload length, filled in by finish()
  put_le<uint32_t>(bytes_, 0);  // reserved
}

FrameWriter& FrameWriter::u8(uint8_t value) {
  bytes_.push_back(static_cast<char>(value));
  return *this;
}
FrameWriter& FrameWriter::u16(uint16_t value) {
  put_le(bytes_, value);
  return *this;
}
FrameWriter& FrameWriter::u32(uint32_t value) {
  put_le(bytes_, value);
  return *this;
}
FrameWriter& FrameWriter::u64(uint64_t value) {
  put_le(bytes_, value);
  return *this;
}
FrameWriter& FrameWriter::str(std::string_view value) {
  if (value.size() > UINT32_MAX) raise(Status::kInvalidInput, "a store field exceeds 4 GiB");
  put_le<uint32_t>(bytes_, static_cast<uint32_t>(value.size()));
  bytes_.append(value);
  return *this;
}

std::string FrameWriter::finish() {
  size_t payload = bytes_.size() - kHeaderBytes;
  if (payload > UINT32_MAX) raise(Status::kInvalidInput, "a store frame exceeds 4 GiB");
  store_le<uint32_t>(bytes_.data() + 16, static_cast<uint32_t>(payload));
  return std::move(bytes_);
}

std::string_view PayloadReader::take(size_t bytes, const char* field) {
  if (rest_.size() < bytes) {
    malformed(std::string(field) + " needs " + std::to_string(bytes) + " bytes, " +
              std::to_string(rest_.size()) + " left");
  }
  std::string_view out = rest_.substr(0, bytes);
  rest_.remove_prefix(bytes);
  return out;
}

uint8_t PayloadReader::u8() {
  return static_cast<uint8_t>(take(1, "u8")[0]);
}
uint16_t PayloadReader::u16() {
  return get_le<uint16_t>(reinterpret_cast<const uint8_t*>(take(2, "u16").data()));
}
uint32_t PayloadReader::u32() {
  return get_le<uint32_t>(reinterpret_cast<const uint8_t*>(take(4, "u32").data()));
}
uint64_t PayloadReader::u64() {
  return get_le<uint64_t>(reinterpret_cast<const uint8_t*>(take(8, "u64").data()));
}

bool PayloadReader::boolean() {
  uint8_t value = u8();
  if (value > 1) malformed("a flag byte is " + std::to_string(value));
  return value == 1;
}

std::string PayloadReader::str() {
  uint32_t length = u32();
  return std::string(take(length, "string"));
}

void PayloadReader::finish() {
  if (!rest_.empty()) malformed(std::to_string(rest_.size()) + " unexpected trailing bytes");
}

void PayloadReader::malformed(const std::string& why) const {
  violation(std::string("malformed ") + what_ + " frame: " + why);
}

std::string encode_hello(uint64_t request_id, const Hello& hello) {
  FrameWriter writer(MessageType::kHello, request_id);
  writer.i64(hello.rank).str(hello.group).u64(hello.heartbeat_timeout_ms).str(hello.job_namespace);
  if (!hello.namespace_key.empty()) writer.str(hello.namespace_key);
  return writer.finish();
}

Hello read_hello(PayloadReader& reader, size_t max_group_bytes) {
  Hello hello;
  hello.rank = reader.i64();
  hello.group = reader.str();
  hello.heartbeat_timeout_ms = reader.u64();
  // Both optional (older clients omit them): they share the namespace "", without a key.
  if (!reader.at_end()) hello.job_namespace = reader.str();
  if (!reader.at_end()) hello.namespace_key = reader.str();
  reader.finish();
  if (hello.group.size() > max_group_bytes) {
    violation("the hello's group name is longer than max_key_bytes");
  }
  if (hello.job_namespace.size() > kMaxJobNamespaceBytes ||
      hello.job_namespace.find('\0') != std::string::npos) {
    violation("the hello's job namespace is longer than " + std::to_string(kMaxJobNamespaceBytes) +
              " bytes or contains a NUL byte");
  }
  if (!hello.namespace_key.empty() && hello.namespace_key.size() != kNamespaceKeyBytes) {
    violation("the hello's namespace key is " + std::to_string(hello.namespace_key.size()) +
              " bytes, not " + std::to_string(kNamespaceKeyBytes));
  }
  return hello;
}

}  // namespace memloom::store::protocol
