// The etcd client's strict JSON reader and writer, base64, and etcd:// URLs.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "src/store/etcd_json.h"
#include "src/store/etcd_watch.h"
#include "src/store/url.h"
#include "tests/support/status_of.h"

namespace memloom::store::etcd {
namespace {

using ::memloom::testing::status_of;

TEST(EtcdJson, ReadsTheGatewaysReplyShapes) {
  auto reply = parse_json(
      R"({"header":{"revision":"12"},"kvs":[{"key":"Zm9v","value":"YmFy","mod_revision":"7"}],)"
      R"("count":"1","succeeded":true,"ratio":-1.5e3,"none":null,"s":"a\"\\\/\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(json_int(reply->find("header")->find("revision")), 12);
  const JsonValue& kv = reply->find("kvs")->items.at(0);
  EXPECT_EQ(json_bytes(kv.find("key")), "foo");
  EXPECT_EQ(json_bytes(kv.find("value")), "bar");
  EXPECT_EQ(json_int(kv.find("lease")), 0) << "proto3 leaves zeros out";
  EXPECT_EQ(json_bytes(kv.find("absent")), "") << "and empty bytes";
  EXPECT_TRUE(reply->find("succeeded")->boolean);
  EXPECT_EQ(reply->find("ratio")->text, "-1.5e3");
  EXPECT_EQ(json_string(reply->find("s")), "a\"\\/\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(EtcdJson, RefusesWhatIsNotExactlyOneValue) {
  for (const char* bad : {"",
                          "{",
                          "}",
                          "{\"a\":}",
                          "{\"a\" 1}",
                          "{a:1}",
                          "[1,]",
                          "[1 2]",
                          "01",
                          "1.",
                          "-",
                          "1e",
                          "\"unclosed",
                          "\"bad \\x escape\"",
                          "\"\\ud800 lone\"",
                          "\"\\udc00\"",
                          "tru",
                          "nul",
                          "{} {}",
                          "[]x",
                          "\"ctrl \x01\"",
                          "{\"a\":1,}"}) {
    std::string error;
    EXPECT_FALSE(parse_json(bad, &error).has_value()) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  std::string deep(65, '[');
  EXPECT_TRUE(parse_json(std::string(64, '[') + std::string(64, ']')).has_value());
  EXPECT_FALSE(parse_json(deep + std::string(65, ']')).has_value()) << "deeper than 64";
}

TEST(EtcdJson, IntegersMustBeWholeAndInRange) {
  auto value = parse_json(R"({"a":"12x","b":"9223372036854775808","c":1.5,"d":[],"e":"-4"})");
  ASSERT_TRUE(value);
  EXPECT_EQ(json_int(value->find("a")), std::nullopt);
  EXPECT_EQ(json_int(value->find("b")), std::nullopt);
  EXPECT_EQ(json_int(value->find("c")), std::nullopt);
  EXPECT_EQ(json_int(value->find("d")), std::nullopt);
  EXPECT_EQ(json_int(value->find("e")), -4);
}

TEST(EtcdJson, WriterQuotesAndEncodes) {
  std::string written = JsonObject()
                            .bytes("key", std::string("a\0b\xff", 4))
                            .string("s", "q\"\\\n")
                            .integer("n", -3)
                            .boolean("t", true)
                            .raw("list", json_array({"1", "{}"}))
                            .finish();
  EXPECT_EQ(written, R"({"key":"YQBi/w==","s":"q\"\\\u000a","n":"-3","t":true,"list":[1,{}]})");
  auto back = parse_json(written);
  ASSERT_TRUE(back);
  EXPECT_EQ(json_bytes(back->find("key")), std::string("a\0b\xff", 4));
  EXPECT_EQ(json_string(back->find("s")), "q\"\\\n");
}

TEST(EtcdJson, Base64RoundTripsEveryLengthAndRefusesJunk) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
    bytes += static_cast<char>(i * 37);
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  for (const char* bad : {"Zm9", "Zm9v!A==", "=AAA", "A===", "Zg==Zg=="})
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
}

TEST(EtcdJson, PrefixRangeEndIsTheNextKey) {
  EXPECT_EQ(prefix_range_end("a/"), "a0");
  EXPECT_EQ(prefix_range_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_range_end(""), std::string(1, '\0'));
}

TEST(EtcdUrlTest, ParsesMembersWithNamesAndAddresses) {
  EtcdUrl url = parse_etcd_url("etcd://etcd-0.cluster.local:2379,10.0.0.2:2380,[::1]:2381");
  ASSERT_EQ(url.endpoints.size(), 3u);
  EXPECT_EQ(url.endpoints[0].host, "etcd-0.cluster.local");
  EXPECT_EQ(url.endpoints[0].port, 2379);
  EXPECT_EQ(url.endpoints[1].host, "10.0.0.2");
  EXPECT_EQ(url.endpoints[2].host, "::1");
  EXPECT_EQ(url.to_string(), "etcd://etcd-0.cluster.local:2379,10.0.0.2:2380,[::1]:2381");
  EXPECT_TRUE(is_etcd_url("etcd://x:1"));
  EXPECT_FALSE(is_etcd_url("tcp://1.2.3.4:1"));
}

TEST(EtcdUrlTest, BadUrlsAreInvalidInputNamingTheFault) {
  for (const char* bad :
       {"etcd://", "etcd://host", "etcd://host:", "etcd://host:0", "etcd://host:65536",
        "etcd://host:2379,", "etcd://,host:1", "etcd://::1:2379", "etcd://[::1:2379",
        "etcd://bad_name:1", "etcd://-x:1", "etcd://a..b:1", "etcd://h:12a"}) {
    EXPECT_EQ(status_of([&] { parse_etcd_url(bad); }), Status::kInvalidInput) << bad;
    EXPECT_EQ(status_of([&] { check_client_store_url(bad); }), Status::kInvalidInput) << bad;
  }
  try {
    parse_etcd_url("etcd://a:1,b:x");
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'x'"), std::string::npos) << error.what();
  }
  EXPECT_EQ(status_of([] { check_client_store_url("tcp://127.0.0.1:0"); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([] { check_client_store_url("etcd://h:1"); }), Status::kSuccess);
}

}  // namespace
}  // namespace memloom::store::etcd
