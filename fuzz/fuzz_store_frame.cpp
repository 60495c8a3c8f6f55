// libFuzzer target: the config store's frame parser (src/store/protocol.h), which the server runs
// on every byte a client sends and the client on every byte the server sends.
//
// Input: a 24-byte frame header, one byte n, n "read ops", then the payload. The header goes
// through decode_header; the payload through a PayloadReader driven by the ops (the field
// sequences of real messages are such op lists). Beyond "no crash, no sanitizer report, only
// memloom::Error", it checks two properties:
//   - decode_header accepts only frames within the limit, and returns the header's own fields;
//   - every field a PayloadReader returns, written back with FrameWriter, gives back exactly the
//     bytes it consumed (so readers and writers agree on the wire format).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "memloom/error.h"
#include "src/store/protocol.h"

namespace {

using namespace memloom::store::protocol;

constexpr size_t kMaxFrameBytes = 1 << 16;

[[noreturn]] void broken(const char* property) {
  std::fprintf(stderr, "fuzz_store_frame: property violated: %s\n", property);
  std::abort();
}

uint32_t le32(const uint8_t* bytes) {
  return static_cast<uint32_t>(bytes[0]) | static_cast<uint32_t>(bytes[1]) << 8 |
         static_cast<uint32_t>(bytes[2]) << 16 | static_cast<uint32_t>(bytes[3]) << 24;
}

void check_header(const uint8_t* data) {
  HeaderBytes bytes;
  std::memcpy(bytes.data(), data, kHeaderBytes);
  FrameHeader header;
  try {
    header = decode_header(bytes, kMaxFrameBytes);
  } catch (const memloom::Error&) {
    return;
  }
  if (le32(data) != kMagic) broken("accepted a bad magic");
  if (le32(data + 20) != 0) broken("accepted a nonzero reserved field");
  if (header.version != kVersion) broken("accepted another version");
  if (header.payload_bytes != le32(data + 16)) broken("payload length differs from the header");
  if (kHeaderBytes + header.payload_bytes > kMaxFrameBytes) broken("accepted an oversized frame");
  // The same header, rebuilt by the writer, encodes to the same bytes (payload length aside).
  FrameWriter writer(header.type, header.request_id);
  std::string rebuilt = writer.finish();
  if (std::memcmp(rebuilt.data(), data, 16) != 0) broken("header does not round-trip");
}

void check_payload(std::string_view ops, std::string_view payload) {
  PayloadReader reader(payload, "fuzzed");
  FrameWriter writer(MessageType::kSet, 1);
  size_t consumed = 0;
  try {
    for (char op : ops) {
      switch (static_cast<uint8_t>(op) % 8) {
        case 0:
          writer.u8(reader.u8());
          consumed += 1;
          break;
        case 1:
          writer.u16(reader.u16());
          consumed += 2;
          break;
        case 2:
          writer.u32(reader.u32());
          consumed += 4;
          break;
        case 3:
          writer.u64(reader.u64());
          consumed += 8;
          break;
        case 4:
          writer.i64(reader.i64());
          consumed += 8;
          break;
        case 5:
          writer.u8(reader.boolean() ? 1 : 0);
          consumed += 1;
          break;
        case 6: {
          std::string value = reader.str();
          consumed += 4 + value.size();
          writer.str(value);
          break;
        }
        default:
          reader.finish();
          if (consumed != payload.size()) broken("finish() accepted trailing bytes");
          break;
      }
      if (consumed > payload.size()) broken("read past the payload");
    }
  } catch (const memloom::Error&) {
    // A refused field consumed nothing that the checks below rely on.
  }
  std::string frame = writer.finish();
  std::string_view written = std::string_view(frame).substr(kHeaderBytes);
  if (written != payload.substr(0, written.size())) broken("fields do not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes + 1) return 0;
  check_header(data);
  size_t op_count = data[kHeaderBytes];
  size_t ops_at = kHeaderBytes + 1;
  if (size - ops_at < op_count) return 0;
  const char* bytes = reinterpret_cast<const char*>(data);
  check_payload(std::string_view(bytes + ops_at, op_count),
                std::string_view(bytes + ops_at + op_count, size - ops_at - op_count));
  return 0;
}
