// Which IP address the emulated backend's network endpoints (collective mesh, transport) bind to
// and advertise to peers.
//
// Rule: MEMLOOM_HOST_ADDR (an IPv4 or IPv6 literal of this host) if set, else 127.0.0.1. The
// loopback default keeps a single-host emulated cluster off the network; a real multi-host run
// sets MEMLOOM_HOST_ADDR to the interface peers can reach. The endpoint binds to exactly that
// address, so the advertised address is always one the endpoint listens on.
#pragma once

#include <cstdint>
#include <string>

namespace memloom::host {

// The address literal (no brackets), e.g. "127.0.0.1" or "fe80::1".
std::string host_address();

// "tcp://IP:PORT", with IPv6 literals bracketed (base::format_tcp_url).
std::string tcp_url(const std::string& host, uint16_t port);

}  // namespace memloom::host
