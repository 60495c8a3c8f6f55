// The store server: one I/O thread runs the acceptor, every session and the engine, so the engine
// needs no locks and requests from one connection are answered in order.
#include "src/store/server.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/store/asio.h"
#include "src/store/connection_admission.h"
#include "src/store/frame_channel.h"
#include "src/store/job_namespaces.h"
#include "src/store/log_throttle.h"
#include "src/store/protocol.h"
#include "src/store/store_engine.h"
#include "src/store/tls_handshake.h"
#include "src/store/url.h"

namespace memloom::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class ServerImpl;

// One client connection. Its identity (rank, group) arrives with the hello frame.
class Session : public Peer, public std::enable_shared_from_this<Session> {
 public:
  Session(ServerImpl& server, uint64_t id, std::shared_ptr<FrameConnection> channel,
          const asio::any_io_executor& executor, std::chrono::milliseconds heartbeat_timeout,
          size_t max_queued_bytes)
      : server_(server),
        id_(id),
        channel_(std::move(channel)),
        heartbeat_timer_(executor),
        heartbeat_timeout_(heartbeat_timeout),
        max_queued_bytes_(max_queued_bytes) {}

  void start();
  uint64_t peer_id() const override { return id_; }
  void send(std::string frame) override {
    channel_->send(std::move(frame));
    if (channel_->queued_bytes() > max_queued_bytes_) {
      channel_->close("the client does not read its replies (" +
                      std::to_string(channel_->queued_bytes()) + " bytes queued)");
    }
  }
  void close(const std::string& reason) {
    heartbeat_timer_.cancel();
    channel_->close(reason);
  }
  // Only once the I/O thread has stopped.
  void detach() { channel_->detach(); }

  void set_heartbeat_timeout(std::chrono::milliseconds timeout) {
    heartbeat_timeout_ = timeout;
    arm_heartbeat_timer();
  }

  const std::string& remote() const { return channel_->remote(); }
  bool hello_done = false;
  uint64_t admission_ticket = 0;  // 0: authenticated (see connection_admission.h)
  int64_t rank = -1;
  std::string group;          // scoped to the job namespace, like every key
  std::string job_namespace;  // from the hello; "" for clients that do not declare one
  // This session's key in the engine: confined to its job's namespace (store_engine.h).
  std::string scoped(const std::string& key) const { return scoped_key(job_namespace, key); }

 private:
  void arm_heartbeat_timer();

  ServerImpl& server_;
  uint64_t id_;
  std::shared_ptr<FrameConnection> channel_;
  asio::steady_timer heartbeat_timer_;
  std::chrono::milliseconds heartbeat_timeout_;
  size_t max_queued_bytes_;
};

class ServerImpl : public Server {
 public:
  explicit ServerImpl(const ServerOptions& options);
  ~ServerImpl() override { stop(); }

  std::string url() const override { return url_; }
  uint16_t port() const override { return port_; }
  size_t connection_count() const override { return connection_count_.load(); }
  size_t max_connections() const override { return admission_.limits().max_connections; }
  void stop() override;

  void dispatch(const std::shared_ptr<Session>& session, const protocol::FrameHeader& header,
                std::string&& payload);
  void on_session_closed(const std::shared_ptr<Session>& session, const std::string& reason);

 private:
  void accept_next();
  void on_accept_error(const boost::system::error_code& error);
  void accept_plain(tcp::socket socket);
  void accept_tls(tcp::socket socket);
  void add_session(std::shared_ptr<FrameConnection> connection, bool authenticated);
  void evict_session(uint64_t session_id, const std::string& reason);
  void sweep_unauthenticated();
  size_t open_connections() const { return sessions_.size() + handshakes_.size(); }
  void handle_request(const std::shared_ptr<Session>& session, uint16_t type, uint64_t id,
                      protocol::PayloadReader& reader);
  void run_io();

  ServerOptions options_;
  protocol::Limits limits_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  std::shared_ptr<asio::ssl::context> tls_context_;  // null: plain TCP
  StoreEngine engine_;
  ConnectionAdmission admission_;
  JobNamespaces namespaces_;
  asio::steady_timer accept_backoff_{io_};
  asio::steady_timer auth_sweep_{io_};
  LogThrottle accept_error_log_{std::chrono::seconds(10)};
  LogThrottle refusal_log_{std::chrono::seconds(10)};
  std::map<uint64_t, std::shared_ptr<Session>> sessions_;
  std::map<uint64_t, std::shared_ptr<TlsHandshake>> handshakes_;  // connections not yet sessions
  uint64_t next_handshake_id_ = 1;
  uint64_t next_session_id_ = 1;
  std::atomic<size_t> connection_count_{0};
  std::string url_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

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

void ServerImpl::dispatch(const std::shared_ptr<Session>& session,
                          const protocol::FrameHeader& header, std::string&& payload) {
  uint16_t type = header.type;
  if (!protocol::is_request(type)) {
    raise(Status::kCommunication,
          "store protocol violation: message type " + std::to_string(type) + " is not a request");
  }
  bool is_hello = type == static_cast<uint16_t>(protocol::MessageType::kHello);
  if (is_hello == session->hello_done) {
    raise(Status::kCommunication, is_hello
                                      ? "store protocol violation: a second hello"
                                      : "store protocol violation: the first frame is " +
                                            std::string(protocol::type_name(type)) + ", not hello");
  }
  protocol::PayloadReader reader(payload, protocol::type_name(type));
  handle_request(session, type, header.request_id, reader);
}

void ServerImpl::handle_request(const std::shared_ptr<Session>& session, uint16_t type, uint64_t id,
                                protocol::PayloadReader& reader) {
  auto reply = [&](protocol::MessageType request) {
    return protocol::FrameWriter(protocol::reply_type(request), id);
  };
  // Decoding errors above this call close the connection; refusals inside `run` become kError.
  auto run = [&](auto&& operation) {
    try {
      operation();
    } catch (const Error& refusal) {
      session->send(protocol::FrameWriter(protocol::MessageType::kError, id)
                        .u32(static_cast<uint32_t>(refusal.status()))
                        .str(refusal.what())
                        .finish());
    }
  };

  switch (static_cast<protocol::MessageType>(type)) {
    case protocol::MessageType::kHello: {
      protocol::Hello hello = protocol::read_hello(reader, limits_.max_key_bytes);
      bool joined = false;
      run([&] {
        namespaces_.join(hello.job_namespace, hello.namespace_key);
        joined = true;
      });
      if (!joined) {
        // Refused (not the job's secret): the kError went out; the connection stays without a
        // hello, so it can do nothing else, and is closed at auth_timeout (TLS: the heartbeat
        // timeout) if it does not leave.
        std::string suppressed;
        if (refusal_log_.admit(&suppressed)) {
          MEMLOOM_LOG(kWarn, "store server: refused " << session->remote() << " in job '"
                                                      << hello.job_namespace
                                                      << "': not the job's secret" << suppressed);
        }
        return;
      }
      session->hello_done = true;
      admission_.remove(session->admission_ticket);  // a valid first frame: authenticated
      session->admission_ticket = 0;
      session->rank = hello.rank;
      session->job_namespace = std::move(hello.job_namespace);
      session->group = session->scoped(hello.group);
      if (hello.heartbeat_timeout_ms > 0) {
        session->set_heartbeat_timeout(std::chrono::milliseconds(
            std::min<uint64_t>(hello.heartbeat_timeout_ms, uint64_t{24} * 3600 * 1000)));
      }
      session->send(reply(protocol::MessageType::kHello)
                        .u16(protocol::kVersion)
                        .u64(limits_.max_frame_bytes)
                        .u64(limits_.max_key_bytes)
                        .u64(limits_.max_value_bytes)
                        .finish());
      return;
    }
    case protocol::MessageType::kHeartbeat:
      reader.finish();
      return session->send(reply(protocol::MessageType::kHeartbeat).finish());
    case protocol::MessageType::kSet: {
      std::string key = reader.str();
      std::string value = reader.str();
      reader.finish();
      return run([&] {
        engine_.set(session->scoped(key), std::move(value));
        session->send(reply(protocol::MessageType::kSet).finish());
      });
    }
    case protocol::MessageType::kGet: {
      std::string key = reader.str();
      uint64_t timeout_ms = reader.u64();
      reader.finish();
      auto timeout = std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, INT32_MAX));
      return run([&] { engine_.get(session, id, session->scoped(key), timeout); });
    }
    case protocol::MessageType::kAdd: {
      std::string key = reader.str();
      int64_t delta = reader.i64();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kAdd)
                          .i64(engine_.add(session->scoped(key), delta))
                          .finish());
      });
    }
    case protocol::MessageType::kCompareAndSwap: {
      std::string key = reader.str();
      std::string expected = reader.str();
      std::string desired = reader.str();
      bool expected_missing = reader.boolean();
      reader.finish();
      return run([&] {
        auto result = engine_.compare_and_swap(session->scoped(key), expected, std::move(desired),
                                               expected_missing);
        session->send(reply(protocol::MessageType::kCompareAndSwap)
                          .u8(result.swapped)
                          .u8(result.current_exists)
                          .str(result.current)
                          .finish());
      });
    }
    case protocol::MessageType::kAppend: {
      std::string key = reader.str();
      std::string value = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kAppend)
                          .u64(engine_.append(session->scoped(key), value))
                          .finish());
      });
    }
    case protocol::MessageType::kRemove: {
      std::string key = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemove)
                          .u8(engine_.remove(session->scoped(key)))
                          .finish());
      });
    }
    case protocol::MessageType::kRemovePrefix: {
      std::string prefix = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemovePrefix)
                          .u64(engine_.remove_prefix(session->scoped(prefix)))
                          .finish());
      });
    }
    case protocol::MessageType::kWatchKey:
    case protocol::MessageType::kWatchRankDown: {
      uint64_t watch_id = reader.u64();
      std::string name = reader.str();
      reader.finish();
      return run([&] {
        if (type == static_cast<uint16_t>(protocol::MessageType::kWatchKey)) {
          engine_.watch_key(session, watch_id, session->scoped(name));
        } else {
          engine_.watch_rank_down(session, watch_id, session->scoped(name));
        }
        session->send(reply(static_cast<protocol::MessageType>(type)).finish());
      });
    }
    case protocol::MessageType::kUnwatch: {
      uint64_t watch_id = reader.u64();
      reader.finish();
      engine_.unwatch(*session, watch_id);
      return session->send(reply(protocol::MessageType::kUnwatch).finish());
    }
    case protocol::MessageType::kEvent:
    case protocol::MessageType::kError:
      break;
  }
  raise(Status::kCommunication,
        "store protocol violation: unhandled message type " + std::to_string(type));
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

}  // namespace

std::unique_ptr<Server> Server::start(const ServerOptions& options) {
  return std::make_unique<ServerImpl>(options);
}

}  // namespace memloom::store
