// The UCX transport refuses IPv6 addresses with a clear error instead of serving them: UCX 1.13
// corrupts memory when a peer connects over IPv6 (see UcxTransport's constructor). TRANS instances
// of IPv6 uniqueIds reach same-node peers all the same (TransApi.IPv6UniqueIdsWorkOnOneNode).
#include <gtest/gtest.h>

#include <string>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"

namespace memloom {
namespace {

TEST(UcxIpv6, AnIpv6HostIsRefusedNamingTheWayOut) {
  hal::TransportOptions options;
  options.host = "::1";
  try {
    host::UcxTransport transport(options);
    FAIL() << "served " << transport.address();
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kNotSupported);
    const std::string message = error.what();
    EXPECT_NE(message.find("::1"), std::string::npos) << message;
    EXPECT_NE(message.find("IPv4"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace memloom
