// The network address in a TRANS uniqueId: "IPv4:port" or "[IPv6]:port".
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace memloom::smem::trans {

struct EndpointAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text;  // the uniqueId as given

  // Throws kInvalidInput with the reason when `unique_id` is not a numeric address and a port in
  // 1..65535 (host names are refused: a uniqueId names exactly one listening socket).
  static EndpointAddress parse(const std::string& unique_id);

  const sockaddr* address() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};

}  // namespace memloom::smem::trans
