// Frame encoding and the checks that make malformed input a clean error, not a crash.
#include "src/store/protocol.h"

#include <gtest/gtest.h>

#include <cstring>

#include "memloom/error.h"

namespace memloom::store::protocol {
namespace {

HeaderBytes header_of(const std::string& frame) {
  HeaderBytes bytes{};
  std::memcpy(bytes.data(), frame.data(), kHeaderBytes);
  return bytes;
}

void expect_violation(const std::function<void()>& call, const std::string& fragment) {
  try {
    call();
    FAIL() << "no error; expected one mentioning '" << fragment << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kCommunication);
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(StoreProtocol, FrameRoundTrips) {
  std::string frame =
      FrameWriter(MessageType::kCompareAndSwap, 42).str("key").str("").u8(1).i64(-5).finish();
  ASSERT_GE(frame.size(), kHeaderBytes);
  EXPECT_EQ(frame.substr(0, 4), "MLST");
  FrameHeader header = decode_header(header_of(frame), 1024);
  EXPECT_EQ(header.type, static_cast<uint16_t>(MessageType::kCompareAndSwap));
  EXPECT_EQ(header.request_id, 42u);
  EXPECT_EQ(header.payload_bytes, frame.size() - kHeaderBytes);

  PayloadReader reader(std::string_view(frame).substr(kHeaderBytes), "test");
  EXPECT_EQ(reader.str(), "key");
  EXPECT_EQ(reader.str(), "");
  EXPECT_TRUE(reader.boolean());
  EXPECT_EQ(reader.i64(), -5);
  EXPECT_NO_THROW(reader.finish());
}

TEST(StoreProtocol, HeaderChecksMagicVersionReservedAndSize) {
  std::string frame = FrameWriter(MessageType::kSet, 1).str("k").str("v").finish();
  std::string bad_magic = frame;
  bad_magic[0] = 'X';
  expect_violation([&] { decode_header(header_of(bad_magic), 1024); }, "magic");
  std::string bad_version = frame;
  bad_version[4] = 2;
  expect_violation([&] { decode_header(header_of(bad_version), 1024); }, "version 2");
  std::string bad_reserved = frame;
  bad_reserved[23] = 1;
  expect_violation([&] { decode_header(header_of(bad_reserved), 1024); }, "reserved");
  expect_violation([&] { decode_header(header_of(frame), frame.size() - 1); }, "exceeds");
  EXPECT_NO_THROW(decode_header(header_of(frame), frame.size()));
}

TEST(StoreProtocol, ReaderRejectsTruncatedAndTrailingPayloads) {
  std::string payload = FrameWriter(MessageType::kSet, 1).str("abc").finish().substr(kHeaderBytes);
  expect_violation(
      [&] {
        PayloadReader reader(std::string_view(payload).substr(0, 5), "set");
        reader.str();
      },
      "malformed set frame");
  expect_violation(
      [&] {
        PayloadReader reader(payload, "set");
        reader.str();
        reader.u64();
      },
      "u64");
  expect_violation(
      [&] {
        std::string longer = payload + "x";
        PayloadReader reader(longer, "set");
        reader.str();
        reader.finish();
      },
      "trailing");
  expect_violation(
      [&] {
        std::string flag(1, '\x07');
        PayloadReader reader(flag, "get");
        reader.boolean();
      },
      "flag");
}

TEST(StoreProtocol, StringLengthBeyondThePayloadIsRejectedWithoutAllocatingIt) {
  std::string payload(
      "\xff\xff\xff\x7f"
      "abc",
      7);  // claims 2 GiB
  expect_violation(
      [&] {
        PayloadReader reader(payload, "set");
        reader.str();
      },
      "needs 2147483647 bytes");
}

TEST(StoreProtocol, RequestAndReplyTypes) {
  EXPECT_TRUE(is_request(static_cast<uint16_t>(MessageType::kHello)));
  EXPECT_TRUE(is_request(static_cast<uint16_t>(MessageType::kUnwatch)));
  EXPECT_FALSE(is_request(0));
  EXPECT_FALSE(is_request(static_cast<uint16_t>(MessageType::kEvent)));
  EXPECT_FALSE(is_request(reply_type(MessageType::kSet)));
  EXPECT_STREQ(type_name(reply_type(MessageType::kGet)), "get reply");
}

// The namespace key is optional on the wire (absent for clients without a job secret, and
// servers from before it refuse what they do not know), and it has one size.
TEST(StoreProtocol, HelloCarriesAnOptionalNamespaceKey) {
  auto read_back = [](const std::string& frame) {
    PayloadReader reader(std::string_view(frame).substr(kHeaderBytes), "hello");
    return read_hello(reader, 64);
  };
  Hello hello{3, "group", 1000, "job", ""};
  std::string keyless = encode_hello(7, hello);
  Hello decoded = read_back(keyless);
  EXPECT_EQ(decoded.job_namespace, "job");
  EXPECT_EQ(decoded.namespace_key, "");
  hello.namespace_key = std::string(kNamespaceKeyBytes, 'k');
  std::string keyed = encode_hello(7, hello);
  EXPECT_EQ(keyed.size(), keyless.size() + 4 + kNamespaceKeyBytes);
  decoded = read_back(keyed);
  EXPECT_EQ(decoded.rank, 3);
  EXPECT_EQ(decoded.group, "group");
  EXPECT_EQ(decoded.heartbeat_timeout_ms, 1000u);
  EXPECT_EQ(decoded.namespace_key, hello.namespace_key);
  hello.namespace_key = "short";
  expect_violation([&] { read_back(encode_hello(7, hello)); }, "namespace key");
}

}  // namespace
}  // namespace memloom::store::protocol
