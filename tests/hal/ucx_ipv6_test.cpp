// The UCX transport on IPv6: served on an address of a network interface (UCX's TCP interfaces
// then use IPv6 addresses too, see UcxTransport's constructor); the loopback address ::1, which
// UCX 1.13's TCP transport cannot use, and a UCX_TCP_AF_PRIO that puts IPv4 first (which corrupts
// memory in UCX 1.13) are refused with clear errors. TRANS instances of ::1 uniqueIds reach
// same-node peers all the same (TransApi.IPv6UniqueIdsWorkOnOneNode).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"

namespace memloom {
namespace {

// An IPv6 address of an interface that is up, neither loopback nor link-local; "" if none.
std::string interface_ipv6_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* entry = list; entry != nullptr && found.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET6) continue;
    if ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) continue;
    const auto* address = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
    if (IN6_IS_ADDR_LINKLOCAL(&address->sin6_addr) || IN6_IS_ADDR_LOOPBACK(&address->sin6_addr))
      continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET6, &address->sin6_addr, text, sizeof(text)) != nullptr) found = text;
  }
  ::freeifaddrs(list);
  return found;
}

Status status_of_opening(const std::string& host, std::string* message) {
  hal::TransportOptions options;
  options.host = host;
  try {
    host::UcxTransport transport(options);
    *message = "served " + transport.address();
    return Status::kSuccess;
  } catch (const Error& error) {
    *message = error.what();
    return error.status();
  }
}

TEST(UcxIpv6, TheLoopbackAddressIsRefusedNamingTheWayOut) {
  std::string message;
  EXPECT_EQ(status_of_opening("::1", &message), Status::kNotSupported) << message;
  EXPECT_NE(message.find("::1"), std::string::npos) << message;
  EXPECT_NE(message.find("127.0.0.1"), std::string::npos) << message;
}

TEST(UcxIpv6, InterfaceAddressesCarryWritesAndReads) {
  const std::string host = interface_ipv6_address();
  if (host.empty()) GTEST_SKIP() << "no IPv6 address on a network interface here";
  hal::TransportOptions options;
  options.host = host;
  // Outlives the server: ASan checks a sendmsg's buffers after the call returned, by when the read
  // below may have its reply and, without this, the memory would be freed (README, "IPv6").
  std::vector<uint8_t> exposed(3 << 20, 0);
  host::UcxTransport server(options), requester(options);
  EXPECT_EQ(server.address().rfind("ucx://[" + host + "]:", 0), 0u) << server.address();
  server.expose(exposed.data(), exposed.size());
  std::vector<uint8_t> data(exposed.size());
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 5);
  const Deadline deadline = Deadline::after(std::chrono::seconds(20));
  const auto remote = reinterpret_cast<uint64_t>(exposed.data());
  requester.transfer(server.address(),
                     {{hal::TransferOp::Direction::kWrite, remote, data.data(), data.size()}},
                     deadline);
  EXPECT_EQ(exposed, data);
  std::vector<uint8_t> back(4096);
  requester.transfer(server.address(),
                     {{hal::TransferOp::Direction::kRead, remote + 4096, back.data(), back.size()}},
                     deadline);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin() + 4096));
}

TEST(UcxIpv6, AnIpv4FirstAddressFamilyPriorityIsRefused) {
  const std::string host = interface_ipv6_address();
  if (host.empty()) GTEST_SKIP() << "no IPv6 address on a network interface here";
  const char* saved = std::getenv("UCX_TCP_AF_PRIO");
  const std::string kept = saved != nullptr ? saved : "";
  ::setenv("UCX_TCP_AF_PRIO", "inet,inet6", 1);
  std::string message;
  const Status status = status_of_opening(host, &message);
  if (saved != nullptr) {
    ::setenv("UCX_TCP_AF_PRIO", kept.c_str(), 1);
  } else {
    ::unsetenv("UCX_TCP_AF_PRIO");
  }
  EXPECT_EQ(status, Status::kNotSupported) << message;
  EXPECT_NE(message.find("UCX_TCP_AF_PRIO"), std::string::npos) << message;
}

}  // namespace
}  // namespace memloom
