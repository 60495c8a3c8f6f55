// UCX 1.13's new protocols (UCX_PROTO_ENABLE=y) abort a process once a peer connects to its
// listener. The transport refuses that setting on that UCX, naming the variable, instead of letting
// the process die inside UCX later.
#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include <cstdlib>
#include <string>

#include "hw/host/ucx_transport.h"
#include "memloom/error.h"

namespace memloom {
namespace {

TEST(UcxProtocols, TheNewProtocolsOfUcx113AreRefusedNamingTheVariable) {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (major != 1 || minor != 13) {
    GTEST_SKIP() << "UCX " << major << "." << minor << " here: only 1.13's are refused";
  }
  const char* saved = std::getenv("UCX_PROTO_ENABLE");
  const std::string kept = saved != nullptr ? saved : "";
  ::setenv("UCX_PROTO_ENABLE", "y", 1);
  Status status = Status::kSuccess;
  std::string message;
  try {
    host::UcxTransport transport(hal::TransportOptions{});
  } catch (const Error& error) {
    status = error.status();
    message = error.what();
  }
  if (saved != nullptr) {
    ::setenv("UCX_PROTO_ENABLE", kept.c_str(), 1);
  } else {
    ::unsetenv("UCX_PROTO_ENABLE");
  }
  EXPECT_EQ(status, Status::kNotSupported) << message;
  EXPECT_NE(message.find("UCX_PROTO_ENABLE=y"), std::string::npos) << message;
}

TEST(UcxProtocols, TurningThemOffExplicitlyIsAccepted) {
  const char* saved = std::getenv("UCX_PROTO_ENABLE");
  const std::string kept = saved != nullptr ? saved : "";
  ::setenv("UCX_PROTO_ENABLE", "n", 1);
  std::string message;
  try {
    host::UcxTransport transport(hal::TransportOptions{});
  } catch (const Error& error) {
    message = error.what();
  }
  if (saved != nullptr) {
    ::setenv("UCX_PROTO_ENABLE", kept.c_str(), 1);
  } else {
    ::unsetenv("UCX_PROTO_ENABLE");
  }
  EXPECT_EQ(message, "");
}

}  // namespace
}  // namespace memloom
