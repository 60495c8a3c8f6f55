// The store server's internals, shared by its two halves: server.cpp (the I/O thread, accepting,
// sessions and their life) and server_requests.cpp (answering each request against the engine).
// Not part of the store's interface (server.h is).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "src/store/asio.h"
#include "src/store/connection_admission.h"
#include "src/store/frame_channel.h"
#include "src/store/job_namespaces.h"
#include "src/store/log_throttle.h"
#include "src/store/protocol.h"
#include "src/store/server.h"
#include "src/store/store_engine.h"
#include "src/store/tls_handshake.h"

namespace memloom::store::server_internals {

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

}  // namespace memloom::store::server_internals
