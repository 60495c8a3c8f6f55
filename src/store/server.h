// Config store server: runs embedded (a thread of a rank process) or standalone (memloom-store).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/store/tls_config.h"

namespace memloom::store {

struct ServerOptions {
  // "tcp://IP:PORT" / "tcp://[IPv6]:PORT"; port 0 picks a free port (see Server::url()).
  std::string listen_url = "tcp://127.0.0.1:0";
  size_t max_frame_bytes = 64u << 20;  // larger frames close the offending connection
  size_t max_value_bytes = 64u << 20;
  // Keys plus values of all jobs together; a write past it is refused with kOutOfMemory (0: none).
  uint64_t max_total_bytes = uint64_t{1} << 30;
  // A job namespace's keys are removed once its last connection has been gone this long.
  std::chrono::milliseconds namespace_grace{5000};
  size_t max_key_bytes = 4096;
  // Lowered at start to the RLIMIT_NOFILE soft limit less a reserve (see max_connections()).
  size_t max_connections = 4096;
  // Connections not yet authenticated (TLS: handshake not finished; plain TCP: no valid first
  // frame yet) have their own budget, a quarter of the cap by default (0), and auth_timeout to
  // authenticate (TLS: tls_handshake_timeout); when it is full the oldest of them is evicted.
  size_t max_unauthenticated_connections = 0;
  std::chrono::milliseconds auth_timeout{5000};
  // Parked gets plus watches one connection may hold (0: no cap); more are refused (kError).
  size_t max_waiters_per_connection = 1024;
  std::chrono::milliseconds heartbeat_timeout{3000};
  // TLS (default: the process-wide setting). With TLS, only peers with a certificate from the
  // configured CAs get a session; a connection that has not finished its handshake within
  // tls_handshake_timeout is dropped.
  TlsSetting tls;
  std::chrono::milliseconds tls_handshake_timeout{5000};
};

class Server {
 public:
  // Binds and starts serving on a background thread; throws memloom::Error on bind failure.
  static std::unique_ptr<Server> start(const ServerOptions& options);
  virtual ~Server() = default;  // stops serving and closes every connection
  // The bound address with the real port, e.g. "tcp://127.0.0.1:40123".
  virtual std::string url() const = 0;
  virtual uint16_t port() const = 0;
  virtual size_t connection_count() const = 0;
  // The connection cap in force (ServerOptions.max_connections, lowered to fit the fd limit).
  virtual size_t max_connections() const = 0;
  virtual void stop() = 0;
};

}  // namespace memloom::store
