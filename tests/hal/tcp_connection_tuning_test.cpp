// The TCP transport's connections: both ends without Nagle and without BBR's internal pacing
// (which doubled the time of a 4 MiB batch over loopback, see host::wire::tune_connection).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "hw/host/tcp_wire.h"
#include "src/base/unique_fd.h"

namespace memloom {
namespace {

std::string congestion_control(int fd) {
  char name[16] = {};
  socklen_t length = sizeof(name);
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length), 0)
      << std::strerror(errno);
  return std::string(name, strnlen(name, sizeof(name)));
}

bool no_delay(int fd) {
  int value = 0;
  socklen_t length = sizeof(value);
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &length), 0);
  return value != 0;
}

TEST(TcpConnectionTuning, ConnectionsNeitherDelayNorPace) {
  // What a connection gets when nobody chooses.
  base::UniqueFd plain(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(plain.valid());
  const std::string system_default = congestion_control(plain.get());
  const bool default_paces = system_default.rfind("bbr", 0) == 0;

  base::UniqueFd tuned(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(tuned.valid());
  host::wire::tune_connection(tuned.get());
  EXPECT_TRUE(no_delay(tuned.get()));
  const std::string used = congestion_control(tuned.get());
  if (default_paces) {
    EXPECT_NE(used.rfind("bbr", 0), 0u) << "the connection kept " << used;
    EXPECT_TRUE(used == "cubic" || used == "reno") << used;
  } else {
    EXPECT_EQ(used, system_default) << "a non-pacing system choice is kept";
  }
}

}  // namespace
}  // namespace memloom
