// The store server: one I/O thread runs the acceptor, every session and the engine, so the engine
// needs no locks and requests from one connection are answered in order.
#include "src/store/server.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/store/asio.h"
#include "src/store/frame_channel.h"
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
  int64_t rank = -1;
  std::string group;

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
  void stop() override;

  void dispatch(const std::shared_ptr<Session>& session, const protocol::FrameHeader& header,
                std::string&& payload);
  void on_session_closed(const std::shared_ptr<Session>& session, const std::string& reason);

 private:
  void accept_next();
  void accept_plain(tcp::socket socket);
  void accept_tls(tcp::socket socket);
  void add_session(std::shared_ptr<FrameConnection> connection);
  void handle_request(const std::shared_ptr<Session>& session, uint16_t type, uint64_t id,
                      protocol::PayloadReader& reader);
  void run_io();

  ServerOptions options_;
  protocol::Limits limits_;
  asio::io_context io_{1};
  tcp::acceptor acceptor_{io_};
  std::shared_ptr<asio::ssl::context> tls_context_;  // null: plain TCP
  StoreEngine engine_;
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

ServerImpl::ServerImpl(const ServerOptions& options)
    : options_(options),
      limits_{options.max_frame_bytes, options.max_key_bytes, options.max_value_bytes},
      engine_(io_.get_executor(), limits_) {
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

  accept_next();
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
    if (error) {
      MEMLOOM_LOG(kWarn, "store server: accept failed: " << error.message());
    } else if (sessions_.size() + handshakes_.size() >= options_.max_connections) {
      MEMLOOM_LOG(kWarn, "store server: refusing a connection, already "
                             << sessions_.size() + handshakes_.size()
                             << " (ServerOptions.max_connections)");
    } else if (tls_context_) {
      accept_tls(std::move(socket));
    } else {
      accept_plain(std::move(socket));
    }
    accept_next();
  });
}

void ServerImpl::accept_plain(tcp::socket socket) {
  add_session(make_tcp_connection(std::move(socket), options_.max_frame_bytes));
}

// The connection becomes a session only once the peer proved its certificate, so a client that
// is refused (or never handshakes) never reaches the engine or the rank-down watchers.
void ServerImpl::accept_tls(tcp::socket socket) {
  uint64_t id = next_handshake_id_++;
  try {
    auto handshake = TlsHandshake::start(
        std::move(socket), tls_context_, TlsRole::kServer, options_.tls_handshake_timeout,
        options_.max_frame_bytes,
        [this, id](std::shared_ptr<FrameConnection> connection, const std::string& error) {
          handshakes_.erase(id);
          if (!connection) {
            MEMLOOM_LOG(kWarn, "store server: refused a connection: " << error);
            return;
          }
          add_session(std::move(connection));
        });
    handshakes_.emplace(id, std::move(handshake));
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "store server: cannot start a TLS handshake: " << error.what());
  }
}

void ServerImpl::add_session(std::shared_ptr<FrameConnection> connection) {
  size_t max_queued = std::max<size_t>(4 * limits_.max_reply_bytes(), size_t{64} << 20);
  auto session =
      std::make_shared<Session>(*this, next_session_id_++, std::move(connection),
                                io_.get_executor(), options_.heartbeat_timeout, max_queued);
  sessions_.emplace(session->peer_id(), session);
  connection_count_.store(sessions_.size());
  session->start();
}

void ServerImpl::on_session_closed(const std::shared_ptr<Session>& session,
                                   const std::string& reason) {
  if (sessions_.erase(session->peer_id()) == 0) return;
  connection_count_.store(sessions_.size());
  engine_.forget(*session);
  if (!session->hello_done) {
    MEMLOOM_LOG(kDebug, "store server: closed " << session->remote() << ": " << reason);
    return;
  }
  if (session->rank >= 0 || !session->group.empty()) {
    MEMLOOM_LOG(kInfo, "store server: rank " << session->rank << " of group '" << session->group
                                             << "' (" << session->remote()
                                             << ") is down: " << reason);
  } else {
    MEMLOOM_LOG(kDebug, "store server: client " << session->remote() << " left: " << reason);
  }
  engine_.announce_rank_down(session->rank, session->group);
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
      int64_t rank = reader.i64();
      std::string group = reader.str();
      uint64_t heartbeat_ms = reader.u64();
      reader.finish();
      if (group.size() > limits_.max_key_bytes) {
        raise(Status::kCommunication,
              "store protocol violation: the hello's group name is longer "
              "than max_key_bytes");
      }
      session->hello_done = true;
      session->rank = rank;
      session->group = std::move(group);
      if (heartbeat_ms > 0) {
        session->set_heartbeat_timeout(std::chrono::milliseconds(
            std::min<uint64_t>(heartbeat_ms, uint64_t{24} * 3600 * 1000)));
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
        engine_.set(key, std::move(value));
        session->send(reply(protocol::MessageType::kSet).finish());
      });
    }
    case protocol::MessageType::kGet: {
      std::string key = reader.str();
      uint64_t timeout_ms = reader.u64();
      reader.finish();
      auto timeout = std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, INT32_MAX));
      return run([&] { engine_.get(session, id, key, timeout); });
    }
    case protocol::MessageType::kAdd: {
      std::string key = reader.str();
      int64_t delta = reader.i64();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kAdd).i64(engine_.add(key, delta)).finish());
      });
    }
    case protocol::MessageType::kCompareAndSwap: {
      std::string key = reader.str();
      std::string expected = reader.str();
      std::string desired = reader.str();
      bool expected_missing = reader.boolean();
      reader.finish();
      return run([&] {
        auto result = engine_.compare_and_swap(key, expected, std::move(desired), expected_missing);
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
        session->send(
            reply(protocol::MessageType::kAppend).u64(engine_.append(key, value)).finish());
      });
    }
    case protocol::MessageType::kRemove: {
      std::string key = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemove).u8(engine_.remove(key)).finish());
      });
    }
    case protocol::MessageType::kRemovePrefix: {
      std::string prefix = reader.str();
      reader.finish();
      return run([&] {
        session->send(reply(protocol::MessageType::kRemovePrefix)
                          .u64(engine_.remove_prefix(prefix))
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
          engine_.watch_key(session, watch_id, name);
        } else {
          engine_.watch_rank_down(session, watch_id, name);
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
    for (auto& [id, session] : sessions_) session->close("the server is stopping");
    for (auto& [id, handshake] : handshakes_) handshake->cancel();
    engine_.clear();
    io_.stop();
  });
  if (thread_.joinable()) thread_.join();
  // The I/O thread is gone: what is left is only touched here.
  for (auto& [id, session] : sessions_) session->detach();
  sessions_.clear();
  handshakes_.clear();
  engine_.clear();
  connection_count_.store(0);
}

}  // namespace

std::unique_ptr<Server> Server::start(const ServerOptions& options) {
  return std::make_unique<ServerImpl>(options);
}

}  // namespace memloom::store
