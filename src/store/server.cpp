// The store server: one I/O thread runs the acceptor, every session and the engine, so the engine
// needs no locks and requests from one connection are answered in order.
#include "src/store/server.h"

#include <algorithm>
#include <cerrno>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/store/server_internals.h"
#include "src/store/url.h"

namespace memloom::store {
namespace server_internals {

void Session::start() {
  auto self = shared_from_this();
  channel_->start(
      [self](const protocol::FrameHeader& header, std::string&& payload) {
        self->server_.dispatch(self, header, std::move(payload));
      },
      [self](const std::string& reason) {
        self->heartbeat_timer_.cancel();
        self->server_.on_session_closed(self, reason);
      });
  arm_heartbeat_timer();
}

void Session::arm_heartbeat_timer() {
  // Any traffic proves the client alive, not only heartbeats.
  heartbeat_timer_.expires_at(channel_->last_activity() + heartbeat_timeout_);
  heartbeat_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    auto self = weak.lock();
    if (error || !self || !self->channel_->is_open()) return;
    if (Clock::now() < self->channel_->last_activity() + self->heartbeat_timeout_) {
      return self->arm_heartbeat_timer();
    }
    self->channel_->close("no frame (heartbeat) within " +
                          std::to_string(self->heartbeat_timeout_.count()) + " ms");
  });
}

AdmissionLimits admission_limits(const ServerOptions& options, std::string* why) {
  AdmissionLimits limits;
  limits.max_connections = connection_cap_for_fd_limit(options.max_connections, why);
  size_t budget = options.max_unauthenticated_connections;
  if (budget == 0) budget = limits.max_connections / 4;
  limits.max_unauthenticated = std::clamp<size_t>(budget, 1, limits.max_connections);
  return limits;
}

ServerImpl::ServerImpl(const ServerOptions& options)
    : options_(options),
      limits_{options.max_frame_bytes, options.max_key_bytes, options.max_value_bytes},
      engine_(io_.get_executor(),
              EngineLimits{limits_, options.max_waiters_per_connection, options.max_total_bytes}),
      admission_(AdmissionLimits{}),
      namespaces_(io_.get_executor(), options.namespace_grace, [this](const std::string& name) {
        size_t removed = engine_.remove_prefix(scoped_key(name, ""));
        MEMLOOM_LOG(kInfo, "store server: job namespace '" << name << "' ended (no connection for "
                                                           << options_.namespace_grace.count()
                                                           << " ms): removed " << removed
                                                           << " keys");
      }) {
  MEMLOOM_CHECK_ARG(options.max_frame_bytes >= 1024 && options.max_frame_bytes <= (1u << 30),
                    "ServerOptions.max_frame_bytes must be in [1 KiB, 1 GiB]");
  MEMLOOM_CHECK_ARG(options.max_value_bytes <= (1u << 30),
                    "ServerOptions.max_value_bytes must be at most 1 GiB");
  MEMLOOM_CHECK_ARG(options.max_key_bytes >= 1 && options.max_key_bytes <= (1u << 20),
                    "ServerOptions.max_key_bytes must be in [1, 1 MiB]");
  MEMLOOM_CHECK_ARG(options.max_connections >= 1, "ServerOptions.max_connections must be >= 1");
  MEMLOOM_CHECK_ARG(options.heartbeat_timeout.count() > 0,
                    "ServerOptions.heartbeat_timeout must be positive");
  MEMLOOM_CHECK_ARG(options.tls_handshake_timeout.count() > 0,
                    "ServerOptions.tls_handshake_timeout must be positive");
  MEMLOOM_CHECK_ARG(options.auth_timeout.count() > 0,
                    "ServerOptions.auth_timeout must be positive");
  std::string why;
  admission_ = ConnectionAdmission(admission_limits(options, &why));
  if (auto tls = options.tls.resolve()) tls_context_ = make_tls_context(*tls, TlsRole::kServer);

  TcpUrl listen = parse_tcp_url(options.listen_url);
  boost::system::error_code error;
  auto address = asio::ip::make_address(listen.host, error);
  if (error) raise(Status::kInvalidInput, "invalid listen address '" + listen.host + "'");
  tcp::endpoint endpoint(address, listen.port);
  auto fail = [&](const char* step) {
    raise(Status::kCommunication, std::string("store server cannot ") + step + " " +
                                      options.listen_url + ": " + error.message());
  };
  if (acceptor_.open(endpoint.protocol(), error)) fail("open a socket for");
  if (acceptor_.set_option(tcp::acceptor::reuse_address(true), error)) fail("configure");
  if (acceptor_.bind(endpoint, error)) fail("bind");
  if (acceptor_.listen(asio::socket_base::max_listen_connections, error)) fail("listen on");
  auto bound = acceptor_.local_endpoint(error);
  if (error) fail("read the bound address of");
  port_ = bound.port();
  url_ = format_tcp_url(bound.address().to_string(), port_);
  const AdmissionLimits& admitted = admission_.limits();
  if (admitted.max_connections < options.max_connections) {
    MEMLOOM_LOG(kWarn, "store server " << url_ << ": at most " << admitted.max_connections
                                       << " connections (" << why << ")");
  } else {
    MEMLOOM_LOG(kInfo, "store server " << url_ << ": at most " << admitted.max_connections
                                       << " connections (" << why << ")");
  }

  accept_next();
  sweep_unauthenticated();
  thread_ = std::thread([this] { run_io(); });
}

void ServerImpl::run_io() {
  while (true) {
    try {
      io_.run();
      return;
    } catch (const std::exception& error) {
      // Handlers catch their own errors; this keeps the server alive if one slips through.
      MEMLOOM_LOG(kError, "store server: unexpected error in the I/O thread: " << error.what());
    }
  }
}

void ServerImpl::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
    if (error == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (error) return on_accept_error(error);
    std::string suppressed;
    if (!admission_.admit(open_connections())) {
      // The socket closes as it goes out of scope.
      if (refusal_log_.admit(&suppressed)) {
        MEMLOOM_LOG(kWarn, "store server: refusing a connection: all "
                               << open_connections()
                               << " connections are held by authenticated clients "
                                  "(max_connections)"
                               << suppressed);
      }
    } else if (tls_context_) {
      accept_tls(std::move(socket));
    } else {
      accept_plain(std::move(socket));
    }
    accept_next();
  });
}

// Out of descriptors (or kernel memory), the connection stays in the backlog and accept fails
// again at once: retrying without a pause spun a core and flooded the log, so wait a little.
void ServerImpl::on_accept_error(const boost::system::error_code& error) {
  const int code = error.value();
  const bool exhausted = error.category() == boost::system::system_category() &&
                         (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM);
  constexpr auto kBackoff = std::chrono::milliseconds(100);
  std::string suppressed;
  if (accept_error_log_.admit(&suppressed)) {
    MEMLOOM_LOG(kWarn, "store server: accept failed: "
                           << error.message() << (exhausted ? "; pausing accepts for 100 ms" : "")
                           << suppressed);
  }
  if (!exhausted) return accept_next();
  accept_backoff_.expires_after(kBackoff);
  accept_backoff_.async_wait([this](const boost::system::error_code& wait) {
    if (!wait && acceptor_.is_open()) accept_next();
  });
}

void ServerImpl::sweep_unauthenticated() {
  admission_.evict_overdue(Clock::now());
  auth_sweep_.expires_after(std::chrono::milliseconds(250));
  auth_sweep_.async_wait([this](const boost::system::error_code& error) {
    if (!error) sweep_unauthenticated();
  });
}

void ServerImpl::accept_plain(tcp::socket socket) {
  add_session(make_tcp_connection(std::move(socket), options_.max_frame_bytes), false);
}

// The connection becomes a session only once the peer proved its certificate, so a client that
// is refused (or never handshakes) never reaches the engine or the rank-down watchers.
void ServerImpl::accept_tls(tcp::socket socket) {
  uint64_t id = next_handshake_id_++;
  // The handshake's own timer ends it at tls_handshake_timeout; the admission deadline is a
  // backstop a little later.
  uint64_t ticket = admission_.add_unauthenticated(
      Clock::now() + options_.tls_handshake_timeout + std::chrono::seconds(1),
      [this, id](const std::string& reason) {
        auto found = handshakes_.find(id);
        if (found == handshakes_.end()) return;
        MEMLOOM_LOG(kDebug, "store server: TLS handshake " << id << " " << reason);
        found->second->cancel();
        handshakes_.erase(found);
      });
  try {
    auto handshake = TlsHandshake::start(
        std::move(socket), tls_context_, TlsRole::kServer, options_.tls_handshake_timeout,
        options_.max_frame_bytes,
        [this, id, ticket](std::shared_ptr<FrameConnection> connection, const std::string& error) {
          admission_.remove(ticket);
          handshakes_.erase(id);
          if (!connection) {
            std::string suppressed;
            if (refusal_log_.admit(&suppressed)) {
              MEMLOOM_LOG(kWarn, "store server: refused a connection: " << error << suppressed);
            }
            return;
          }
          add_session(std::move(connection), true);
        });
    handshakes_.emplace(id, std::move(handshake));
  } catch (const std::exception& error) {
    admission_.remove(ticket);
    MEMLOOM_LOG(kWarn, "store server: cannot start a TLS handshake: " << error.what());
  }
}

// A plain connection counts as unauthenticated until its first valid frame (the hello); a TLS one
// arrives here authenticated (its handshake proved the certificate).
void ServerImpl::add_session(std::shared_ptr<FrameConnection> connection, bool authenticated) {
  size_t max_queued = std::max<size_t>(4 * limits_.max_reply_bytes(), size_t{64} << 20);
  auto session =
      std::make_shared<Session>(*this, next_session_id_++, std::move(connection),
                                io_.get_executor(), options_.heartbeat_timeout, max_queued);
  sessions_.emplace(session->peer_id(), session);
  connection_count_.store(sessions_.size());
  if (!authenticated) {
    session->admission_ticket = admission_.add_unauthenticated(
        Clock::now() + options_.auth_timeout,
        [this, id = session->peer_id()](const std::string& reason) { evict_session(id, reason); });
  }
  session->start();
}

// Only for sessions that never sent a hello: they hold nothing in the engine and no one watches
// them, so forgetting them here is all the close handler would have done.
void ServerImpl::evict_session(uint64_t session_id, const std::string& reason) {
  auto found = sessions_.find(session_id);
  if (found == sessions_.end()) return;
  std::shared_ptr<Session> session = std::move(found->second);
  sessions_.erase(found);
  connection_count_.store(sessions_.size());
  MEMLOOM_LOG(kDebug, "store server: " << session->remote() << " " << reason);
  session->close(reason);
}

void ServerImpl::on_session_closed(const std::shared_ptr<Session>& session,
                                   const std::string& reason) {
  admission_.remove(session->admission_ticket);
  if (sessions_.erase(session->peer_id()) == 0) return;
  connection_count_.store(sessions_.size());
  engine_.forget(*session);
  if (session->hello_done) namespaces_.leave(session->job_namespace);
  if (!session->hello_done) {
    MEMLOOM_LOG(kDebug, "store server: closed " << session->remote() << ": " << reason);
    return;
  }
  if (reason == "the peer closed the connection") {
    // A clean close: a rank that finished (or was told to leave), not one that is down.
    MEMLOOM_LOG(kDebug, "store server: rank " << session->rank << " of group '"
                                              << visible_key(session->group) << "' ("
                                              << session->remote() << ") left");
  } else if (session->rank >= 0 || !visible_key(session->group).empty()) {
    MEMLOOM_LOG(kInfo, "store server: rank " << session->rank << " of group '"
                                             << visible_key(session->group) << "' of job '"
                                             << session->job_namespace << "' (" << session->remote()
                                             << ") is down: " << reason);
  } else {
    MEMLOOM_LOG(kDebug, "store server: client " << session->remote() << " left: " << reason);
  }
  engine_.announce_rank_down(session->rank, session->group);  // scoped at the hello
}

void ServerImpl::stop() {
  std::lock_guard<std::mutex> lock(stop_mutex_);
  if (stopped_) return;
  stopped_ = true;
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    accept_backoff_.cancel();
    auth_sweep_.cancel();
    for (auto& [id, session] : sessions_) session->close("the server is stopping");
    for (auto& [id, handshake] : handshakes_) handshake->cancel();
    engine_.clear();
    namespaces_.clear();
    io_.stop();
  });
  if (thread_.joinable()) thread_.join();
  // The I/O thread is gone: what is left is only touched here.
  for (auto& [id, session] : sessions_) session->detach();
  sessions_.clear();
  handshakes_.clear();
  engine_.clear();
  namespaces_.clear();
  connection_count_.store(0);
}

}  // namespace server_internals

std::unique_ptr<Server> Server::start(const ServerOptions& options) {
  return std::make_unique<server_internals::ServerImpl>(options);
}

}  // namespace memloom::store
