// The network address in a TRANS uniqueId: "IPv4:port" or "[IPv6]:port". An instance holds that
// address (bound, not listening) for its lifetime, so a uniqueId names one live instance, as a
// MemFabric engine's listening port does; its data moves through the HAL transport, bound to the
// same IP at a port of the transport's choosing and published with the instance (peer_record.h).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "src/base/unique_fd.h"

namespace memloom::smem::trans {

struct EndpointAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text;  // the uniqueId as given
  std::string host;  // the IP literal, without brackets

  // Throws kInvalidInput with the reason when `unique_id` is not a numeric address and a port in
  // 1..65535 (host names are refused: a uniqueId names exactly one listening socket).
  static EndpointAddress parse(const std::string& unique_id);

  const sockaddr* address() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};

// A socket bound to exactly `address` (not listening: nothing is served there). Throws
// kInvalidInput when the address is not one of this host's, kInvalidValue ("in use") when another
// socket already holds it.
base::UniqueFd hold_address(const EndpointAddress& address);

}  // namespace memloom::smem::trans
