// What the UCX tests that play an outsider share: an endpoint to a UCX transport opened from a
// worker of the outsider's own, without memloom's job proof.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "hw/host/ucx_endpoints.h"

namespace memloom::hal_test {

// An endpoint from `endpoints` to the UCX transport whose address is `address` ("ucx://IP:PORT",
// as UcxTransport::address() gives it on IPv4). Another `instance` opens another endpoint to the
// same address.
inline std::shared_ptr<host::UcxPeer> connect_as_outsider(host::UcxEndpoints& endpoints,
                                                          const std::string& address,
                                                          int instance = 0) {
  const size_t colon = address.rfind(':');
  const std::string host = address.substr(6, colon - 6);
  const auto port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  return endpoints.peer(address + "#" + std::to_string(instance), host, port,
                        Deadline::after(std::chrono::seconds(5)));
}

}  // namespace memloom::hal_test
