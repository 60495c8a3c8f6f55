// Host names in store URLs: resolved once when parsed, to a literal of either family, and a name
// that does not resolve says so (the store's parser and memloom-run's --store share the rule).
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "src/store/url.h"

namespace memloom::store {
namespace {

TEST(StoreUrlNames, LocalhostResolvesToALoopbackLiteral) {
  const TcpUrl url = parse_tcp_url("tcp://localhost:29555");
  EXPECT_TRUE(url.host == "127.0.0.1" || url.host == "::1") << url.host;
  EXPECT_EQ(url.port, 29555);
}

TEST(StoreUrlNames, LiteralsOfBothFamiliesStayAsWritten) {
  EXPECT_EQ(parse_tcp_url("tcp://10.1.2.3:5").host, "10.1.2.3");
  const TcpUrl six = parse_tcp_url("tcp://[::1]:5");
  EXPECT_EQ(six.host, "::1");
  EXPECT_TRUE(six.ipv6);
}

TEST(StoreUrlNames, AnUnknownNameSaysItDoesNotResolve) {
  try {
    parse_tcp_url("tcp://no-such-host.invalid:29555");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find("'no-such-host.invalid' does not resolve"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace memloom::store
