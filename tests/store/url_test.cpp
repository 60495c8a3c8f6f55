#include "src/store/url.h"

#include <gtest/gtest.h>

#include "memloom/error.h"

namespace memloom::store {
namespace {

TEST(TcpUrl, ParsesIpv4) {
  TcpUrl url = parse_tcp_url("tcp://10.1.2.3:5000");
  EXPECT_EQ(url.host, "10.1.2.3");
  EXPECT_EQ(url.port, 5000);
  EXPECT_FALSE(url.ipv6);
  EXPECT_EQ(url.to_string(), "tcp://10.1.2.3:5000");
}

TEST(TcpUrl, ParsesBracketedIpv6) {
  TcpUrl url = parse_tcp_url("tcp://[::1]:0");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 0);
  EXPECT_TRUE(url.ipv6);
  EXPECT_EQ(url.to_string(), "tcp://[::1]:0");
  EXPECT_EQ(parse_tcp_url("tcp://[fe80::1:2]:65535").host, "fe80::1:2");
}

TEST(TcpUrl, FormatsIpv6WithBrackets) {
  EXPECT_EQ(format_tcp_url("::1", 7), "tcp://[::1]:7");
  EXPECT_EQ(format_tcp_url("127.0.0.1", 7), "tcp://127.0.0.1:7");
}

class BadTcpUrl : public ::testing::TestWithParam<const char*> {};

TEST_P(BadTcpUrl, IsInvalidInputNamingTheUrl) {
  try {
    parse_tcp_url(GetParam());
    FAIL() << "accepted " << GetParam();
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find(GetParam()), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BadTcpUrl,
                         ::testing::Values("", "127.0.0.1:80", "http://127.0.0.1:80",
                                           "tcp://127.0.0.1", "tcp://127.0.0.1:", "tcp://:80",
                                           "tcp://127.0.0.1:65536", "tcp://127.0.0.1:-1",
                                           "tcp://127.0.0.1:80x", "tcp://no-such-host.invalid:80",
                                           "tcp://::1:80", "tcp://[::1:80", "tcp://[::1]80",
                                           "tcp://[127.0.0.1]:80", "tcp://[zz::1]:80",
                                           "tcp://256.0.0.1:80"));

}  // namespace
}  // namespace memloom::store
