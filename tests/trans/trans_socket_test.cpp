// The data connections' socket settings: both ends without Nagle and without BBR's internal pacing
// (which doubled the time of a 4 MiB batch over loopback, see socket_io.h).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>

#include "src/smem/trans/endpoint_address.h"
#include "src/smem/trans/socket_io.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

using smem::trans::EndpointAddress;
using smem::trans::UniqueFd;

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

TEST(TransSocket, DataConnectionsNeitherDelayNorPace) {
  // What a connection gets when nobody chooses.
  UniqueFd plain(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(plain.valid());
  const std::string system_default = congestion_control(plain.get());
  const bool default_paces = system_default.rfind("bbr", 0) == 0;

  const EndpointAddress address = EndpointAddress::parse(free_unique_id());
  UniqueFd listener = smem::trans::listen_on(address);
  UniqueFd client =
      smem::trans::connect_to(address, memloom::Deadline::after(std::chrono::seconds(10)));
  pollfd ready{listener.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 10000), 1);
  UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  ASSERT_TRUE(server.valid()) << std::strerror(errno);
  smem::trans::tune_data_socket(server.get());

  for (int fd : {client.get(), server.get()}) {
    EXPECT_TRUE(no_delay(fd));
    const std::string used = congestion_control(fd);
    if (default_paces) {
      EXPECT_NE(used.rfind("bbr", 0), 0u) << "the data connection kept " << used;
      EXPECT_TRUE(used == "cubic" || used == "reno") << used;
    } else {
      EXPECT_EQ(used, system_default) << "a non-pacing system choice is kept";
    }
  }
}

}  // namespace
}  // namespace memloom::trans_test
