// UCX 1.13's new protocols (UCX_PROTO_ENABLE=y) abort a process once a peer connects to its
// listener. The transport refuses that setting on that UCX, naming the variable, instead of letting
// the process die inside UCX later.
#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include <string>

#include "hw/host/ucx_transport.h"
#include "memloom/error.h"
#include "tests/support/scoped_env.h"

namespace memloom {
namespace {

// The error of creating a transport with UCX_PROTO_ENABLE=`value` ("" when it was created).
std::string error_with_protocols(const char* value) {
  const test::ScopedEnv protocols("UCX_PROTO_ENABLE", value);
  try {
    host::UcxTransport transport(hal::TransportOptions{});
  } catch (const Error& error) {
    return std::string(status_name(error.status())) + ": " + error.what();
  }
  return "";
}

TEST(UcxProtocols, TheNewProtocolsOfUcx113AreRefusedNamingTheVariable) {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (major != 1 || minor != 13) {
    GTEST_SKIP() << "UCX " << major << "." << minor << " here: only 1.13's are refused";
  }
  const std::string error = error_with_protocols("y");
  EXPECT_EQ(error.rfind(status_name(Status::kNotSupported), 0), 0u) << error;
  EXPECT_NE(error.find("UCX_PROTO_ENABLE=y"), std::string::npos) << error;
}

TEST(UcxProtocols, TurningThemOffExplicitlyIsAccepted) {
  EXPECT_EQ(error_with_protocols("n"), "");
}

}  // namespace
}  // namespace memloom
