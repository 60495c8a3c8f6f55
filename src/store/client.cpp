// The store client: user threads encode a request, hand it to the I/O thread and wait for the
// reply with a deadline; the I/O thread owns the socket, matches replies to requests by id, sends
// heartbeats, watches the server's liveness and forwards watch events to the EventDispatcher.
#include "src/store/client.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/base/interrupt_check.h"
#include "src/base/log.h"
#include "src/base/wait_reporter.h"
#include "src/store/asio.h"
#include "src/store/etcd_client.h"
#include "src/store/event_dispatcher.h"
#include "src/store/frame_channel.h"
#include "src/store/namespace_key.h"
#include "src/store/protocol.h"
#include "src/store/tls_handshake.h"
#include "src/store/url.h"

namespace memloom::store {
namespace {

// What a user checks when no store answers: which process should serve it, and where the
// address came from.
// FrameChannel's reason for a clean close by the other end.
constexpr const char* kPeerClosed = "the peer closed the connection";

constexpr const char* kWhatToCheck =
    "Check that a store runs there (memloom-run and memloom-store start one; under torchrun, "
    "mpirun or srun rank 0 serves it), that MEMLOOM_STORE_URL (or MASTER_ADDR/MASTER_PORT) names "
    "the same host and port on every rank, and that no firewall blocks the port "
    "(memloom-info shows the store this process would use)";

namespace asio = boost::asio;
using asio::ip::tcp;
using protocol::FrameHeader;
using protocol::FrameWriter;
using protocol::MessageType;
using protocol::PayloadReader;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Time a reply may take beyond what the request itself waits for (a get's timeout). A dead or
// frozen server is detected much sooner by the heartbeat replies; this bounds a live server
// that does not answer.
constexpr milliseconds kReplyMargin{30000};
// The least time the first connection attempt gets (connect_timeout may be 0).
constexpr milliseconds kFirstAttemptTime{1000};
// Replies are small until the hello announced the server's limits.
constexpr size_t kHandshakeFrameBytes = 64 * 1024;
// Longest wait a get may ask for (the server clamps to the same).
constexpr milliseconds kMaxGetTimeout{INT32_MAX};

struct Reply {
  uint16_t type = 0;
  std::string payload;
};

class ClientImpl : public Client {
 public:
  ClientImpl(std::string url, const ClientOptions& options);
  ~ClientImpl() override;
  void open();

  MEMLOOM_STORE_CLIENT_OVERRIDES

 private:
  // Sends one request and waits for its reply until `deadline`; returns the reply payload.
  // Throws the server's refusal (kError) as memloom::Error, kTimeout at the deadline and
  // kCommunication when the connection is lost.
  std::string call(MessageType type, uint64_t id, std::string frame, Deadline deadline,
                   const std::string& what);
  uint64_t next_id() { return next_request_id_.fetch_add(1); }
  WatchId watch(MessageType type, const std::string& name, WatchCallback callback);

  // I/O thread.
  void start_connect(Deadline deadline, Clock::duration backoff, bool first_attempt);
  void on_connected(tcp::socket socket, Deadline deadline);
  void on_channel(std::shared_ptr<FrameConnection> channel);
  void on_frame(const FrameHeader& header, std::string&& payload);
  void on_closed(const std::string& reason);
  void heartbeat_tick();
  void fail_connect(const std::string& reason);

  // Fails every pending call with `message`; caller holds mutex_.
  void fail_pending_locked(Status status, const std::string& message);

  const std::string url_;
  const ClientOptions options_;
  tcp::endpoint endpoint_;
  std::shared_ptr<asio::ssl::context> tls_context_;  // null: plain TCP

  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::shared_ptr<FrameConnection> channel_;  // I/O thread only
  asio::steady_timer connect_timer_{io_};     // I/O thread only
  asio::steady_timer heartbeat_timer_{io_};   // I/O thread only
  std::optional<tcp::socket> connecting_;     // I/O thread only
  std::shared_ptr<TlsHandshake> handshake_;   // I/O thread only
  std::string connect_error_;                 // I/O thread only
  std::promise<void> connect_result_;
  std::thread io_thread_;

  bool connect_done_ = false;                 // I/O thread only
  std::shared_ptr<EventDispatcher> events_;   // started last in the constructor (it owns a thread)
  std::atomic<uint64_t> next_request_id_{1};  // 0 is the heartbeat's id
  std::atomic<WatchId> next_watch_id_{1};
  std::atomic<bool> connected_{false};
  protocol::Limits limits_{};  // written once by open(), before any other call

  mutable std::mutex mutex_;
  std::condition_variable calls_done_;
  std::unordered_map<uint64_t, std::promise<Reply>> pending_;
  size_t in_flight_ = 0;
  bool closing_ = false;
  std::string lost_reason_ = "not connected yet";
};

ClientImpl::ClientImpl(std::string url, const ClientOptions& options)
    : url_(std::move(url)), options_(options) {
  options.check();
  TcpUrl parsed = parse_tcp_url(url_);
  boost::system::error_code error;
  auto address = asio::ip::make_address(parsed.host, error);
  if (error || parsed.port == 0) {
    raise(Status::kInvalidInput, "invalid store URL '" + url_ + "': cannot connect to port 0");
  }
  endpoint_ = tcp::endpoint(address, parsed.port);
  if (auto tls = options.tls.resolve()) tls_context_ = make_tls_context(*tls, TlsRole::kClient);
  events_ = EventDispatcher::start();
  io_thread_ = std::thread([this] { io_.run(); });
}

void ClientImpl::open() {
  Deadline deadline = Deadline::after(options_.connect_timeout);
  auto connected = connect_result_.get_future();
  asio::post(io_, [this, deadline] { start_connect(deadline, milliseconds(5), true); });
  // The I/O thread gives up at the deadline itself; the margin only covers its reaction time.
  const auto give_up = deadline.time_point() + kFirstAttemptTime + milliseconds(2000);
  base::WaitReporter reporter(deadline);
  while (connected.wait_until(std::min(
             give_up, Clock::now() + std::max(reporter.next_report_in(), milliseconds(1)))) !=
         std::future_status::ready) {
    if (Clock::now() >= give_up) {
      raise(Status::kCommunication,
            "could not connect to the config store at " + url_ + ". " + kWhatToCheck);
    }
    reporter.poll([this] { return "the config store at " + url_ + " to accept a connection"; });
  }
  connected.get();

  uint64_t id = next_id();
  protocol::Hello hello;
  hello.rank = options_.rank;
  hello.group = options_.group;
  hello.heartbeat_timeout_ms = static_cast<uint64_t>(options_.heartbeat_timeout.count());
  hello.job_namespace = options_.job_namespace.value_or(default_job_namespace());
  hello.namespace_key =
      namespace_key(options_.job_secret.value_or(default_job_secret()), hello.job_namespace);
  std::string reply =
      call(MessageType::kHello, id, protocol::encode_hello(id, hello),
           Deadline::after(std::max(deadline.remaining(), milliseconds(1000))), "hello");
  PayloadReader reader(reply, "hello reply");
  uint16_t version = reader.u16();
  limits_.max_frame_bytes = reader.u64();
  limits_.max_key_bytes = reader.u64();
  limits_.max_value_bytes = reader.u64();
  reader.finish();
  if (version != protocol::kVersion) {
    raise(Status::kCommunication,
          "the config store at " + url_ + " speaks protocol version " + std::to_string(version));
  }
  asio::post(io_, [this, max = limits_.max_reply_bytes()] {
    if (!channel_) return;
    channel_->set_max_incoming_frame_bytes(max);
    heartbeat_tick();  // only now: the hello must be the connection's first frame
  });
}

ClientImpl::~ClientImpl() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    closing_ = true;
    fail_pending_locked(Status::kCommunication,
                        "the store client was destroyed while the call was in flight");
    // Callers wake up with that error at once; wait until they have left this object.
    while (!calls_done_.wait_for(lock, std::chrono::seconds(5), [&] { return in_flight_ == 0; })) {
      MEMLOOM_LOG(kWarn, "store client: still waiting for " << in_flight_
                                                            << " calls to return before closing");
    }
  }
  events_->stop();
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    connect_timer_.cancel();
    heartbeat_timer_.cancel();
    if (connecting_) connecting_->close(ignored);
    if (handshake_) handshake_->cancel();
    if (channel_) channel_->close("the client is closing");
    io_.stop();
  });
  io_thread_.join();
  if (channel_) channel_->detach();
}

void ClientImpl::fail_pending_locked(Status status, const std::string& message) {
  for (auto& [id, promise] : pending_)
    promise.set_exception(std::make_exception_ptr(Error(status, message)));
  pending_.clear();
}

std::string ClientImpl::call(MessageType type, uint64_t id, std::string frame, Deadline deadline,
                             const std::string& what) {
  if (limits_.max_frame_bytes != 0 && frame.size() > limits_.max_frame_bytes) {
    raise(Status::kInvalidInput, "store " + what + ": the request of " +
                                     std::to_string(frame.size()) +
                                     " bytes exceeds the server's frame limit of " +
                                     std::to_string(limits_.max_frame_bytes));
  }
  std::future<Reply> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) raise(Status::kCommunication, "store " + what + ": the client is closing");
    if (!connected_) {
      raise(Status::kCommunication, "store " + what + ": not connected to the config store at " +
                                        url_ + " (" + lost_reason_ + ")");
    }
    auto [slot, inserted] = pending_.emplace(id, std::promise<Reply>());
    future = slot->second.get_future();
    ++in_flight_;
  }
  // Leaving by any path releases this call's hold on the client (see ~ClientImpl).
  struct InFlight {
    ClientImpl& client;
    ~InFlight() {
      std::lock_guard<std::mutex> lock(client.mutex_);
      if (--client.in_flight_ == 0) client.calls_done_.notify_all();
    }
  } in_flight{*this};

  asio::post(io_, [this, frame = std::move(frame)]() mutable {
    if (channel_) channel_->send(std::move(frame));
  });

  // The wait asks the caller's interrupt check (memloom/interrupt.h) between slices, so that a
  // Ctrl-C reaches a caller whose store stopped answering (a TRANS call looking up a new peer).
  bool replied = false;
  try {
    replied = base::wait_in_slices(deadline.time_point(), [&](auto end) {
      return future.wait_until(end) == std::future_status::ready;
    });
  } catch (const Error&) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(id);  // its reply, if one still comes, is dropped
    throw;
  }
  if (!replied) {
    std::lock_guard<std::mutex> lock(mutex_);
    // A reply racing with the deadline has already removed the entry and fulfilled the future.
    if (pending_.erase(id) == 1) {
      raise(Status::kTimeout, "store " + what + ": no reply from " + url_ + " in time");
    }
  }
  Reply reply = future.get();  // rethrows a lost connection
  if (reply.type == static_cast<uint16_t>(MessageType::kError)) {
    PayloadReader reader(reply.payload, "error");
    auto status = static_cast<Status>(reader.u32());
    std::string message = reader.str();
    raise(status, "store " + what + " refused: " + message);
  }
  if (reply.type != protocol::reply_type(type)) {
    raise(Status::kCommunication,
          "store " + what + ": the server answered with a " + protocol::type_name(reply.type));
  }
  return std::move(reply.payload);
}

// ---- I/O thread --------------------------------------------------------------------------

void ClientImpl::start_connect(Deadline deadline, Clock::duration backoff, bool first_attempt) {
  connecting_.emplace(io_);
  // The timer bounds this attempt: a SYN into the void would otherwise wait for minutes. The
  // first attempt always gets a moment, so connect_timeout 0 means "try once".
  auto attempt_end = deadline.time_point();
  if (first_attempt) attempt_end = std::max(attempt_end, Clock::now() + kFirstAttemptTime);
  connect_timer_.expires_at(attempt_end);
  connect_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error || !connecting_) return;
    boost::system::error_code ignored;
    connecting_->close(ignored);  // completes the attempt with operation_aborted
  });
  connecting_->async_connect(
      endpoint_, [this, deadline, backoff](const boost::system::error_code& error) {
        connect_timer_.cancel();
        if (!error) {
          tcp::socket socket = std::move(*connecting_);
          connecting_.reset();
          return on_connected(std::move(socket), deadline);
        }
        if (error != asio::error::operation_aborted) connect_error_ = error.message();
        connecting_.reset();
        bool closing = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          closing = closing_;
        }
        if (closing || deadline.expired()) {
          return fail_connect(connect_error_.empty() ? "timed out" : connect_error_);
        }
        // The server may not be up yet: retry with a growing pause, never past the deadline.
        connect_timer_.expires_after(std::min<Clock::duration>(backoff, deadline.remaining()));
        connect_timer_.async_wait([this, deadline, backoff](const boost::system::error_code& wait) {
          if (wait) return fail_connect("cancelled");
          start_connect(deadline, std::min<Clock::duration>(backoff * 2, milliseconds(200)), false);
        });
      });
}

void ClientImpl::fail_connect(const std::string& reason) {
  if (connect_done_) return;
  connect_done_ = true;
  connect_result_.set_exception(std::make_exception_ptr(Error(
      Status::kCommunication, "could not connect to the config store at " + url_ + " within " +
                                  std::to_string(options_.connect_timeout.count()) +
                                  " ms: " + reason + ". " + kWhatToCheck)));
}

void ClientImpl::on_connected(tcp::socket socket, Deadline deadline) {
  if (!tls_context_)
    return on_channel(make_tcp_connection(std::move(socket), kHandshakeFrameBytes));
  // A refused handshake is final (the server is up and said no): no retry.
  auto timeout = std::max(deadline.remaining(), kFirstAttemptTime);
  try {
    handshake_ = TlsHandshake::start(
        std::move(socket), tls_context_, TlsRole::kClient, timeout, kHandshakeFrameBytes,
        [this](std::shared_ptr<FrameConnection> connection, const std::string& error) {
          handshake_.reset();
          if (!connection) return fail_connect(error);
          on_channel(std::move(connection));
        });
  } catch (const std::exception& error) {
    fail_connect(std::string("cannot start the TLS handshake: ") + error.what());
  }
}

void ClientImpl::on_channel(std::shared_ptr<FrameConnection> channel) {
  channel_ = std::move(channel);
  channel_->start([this](const FrameHeader& header,
                         std::string&& payload) { on_frame(header, std::move(payload)); },
                  [this](const std::string& reason) { on_closed(reason); });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connected_ = true;
    lost_reason_.clear();
  }
  connect_done_ = true;
  connect_result_.set_value();
}

void ClientImpl::on_frame(const FrameHeader& header, std::string&& payload) {
  if (header.type == static_cast<uint16_t>(MessageType::kEvent)) {
    PayloadReader reader(payload, "event");
    WatchId id = reader.u64();
    WatchEvent event;
    uint8_t kind = reader.u8();
    if (kind > static_cast<uint8_t>(WatchEventKind::kRankDown)) {
      raise(Status::kCommunication, "store protocol violation: event kind " + std::to_string(kind));
    }
    event.kind = static_cast<WatchEventKind>(kind);
    event.key = reader.str();
    event.value = reader.str();
    event.rank = static_cast<int>(reader.i64());
    event.group = reader.str();
    reader.finish();
    return events_->push(id, std::move(event));
  }
  bool reply = (header.type & protocol::kReplyBit) != 0 &&
               protocol::is_request(header.type & ~protocol::kReplyBit);
  if (!reply && header.type != static_cast<uint16_t>(MessageType::kError)) {
    raise(Status::kCommunication,
          "store protocol violation: the server sent message type " + std::to_string(header.type));
  }
  std::promise<Reply> promise;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = pending_.find(header.request_id);
    if (found == pending_.end()) return;  // a heartbeat, an unwatch, or a call that timed out
    promise = std::move(found->second);
    pending_.erase(found);
  }
  promise.set_value(Reply{header.type, std::move(payload)});
}

void ClientImpl::on_closed(const std::string& reason) {
  heartbeat_timer_.cancel();
  std::lock_guard<std::mutex> lock(mutex_);
  connected_ = false;
  lost_reason_ = "connection lost: " + reason;
  // A store that closes cleanly is a job ending (under mpirun the store lives in rank 0, which
  // may exit while the others tidy up): nothing for a user to act on. A call that needed it fails
  // with the reason, and its caller decides whether that matters.
  if (!closing_ && reason != kPeerClosed) {
    MEMLOOM_LOG(kWarn, "store client: connection to " << url_ << " lost: " << reason);
  } else if (!closing_) {
    MEMLOOM_LOG(kDebug, "store client: the config store at " << url_ << " closed the connection");
  }
  fail_pending_locked(Status::kCommunication,
                      "the connection to the config store at " + url_ + " was lost: " + reason);
}

void ClientImpl::heartbeat_tick() {
  if (!channel_ || !channel_->is_open()) return;
  // The server answers every heartbeat, so silence means it is gone or frozen.
  auto silence = Clock::now() - channel_->last_activity();
  if (silence > options_.heartbeat_timeout + options_.heartbeat_interval) {
    return channel_->close(
        "the server sent nothing for " +
        std::to_string(std::chrono::duration_cast<milliseconds>(silence).count()) + " ms");
  }
  channel_->send(FrameWriter(MessageType::kHeartbeat, 0).finish());
  heartbeat_timer_.expires_after(options_.heartbeat_interval);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) heartbeat_tick();
  });
}

// ---- operations ----------------------------------------------------------------------------

void ClientImpl::set(const std::string& key, const std::string& value) {
  uint64_t id = next_id();
  call(MessageType::kSet, id, FrameWriter(MessageType::kSet, id).str(key).str(value).finish(),
       Deadline::after(kReplyMargin), "set '" + key + "'");
}

std::optional<std::string> ClientImpl::get(const std::string& key, milliseconds timeout) {
  MEMLOOM_CHECK_ARG(timeout.count() >= 0, "store get: the timeout must not be negative");
  timeout = std::min(timeout, kMaxGetTimeout);
  uint64_t id = next_id();
  std::string reply = call(MessageType::kGet, id,
                           FrameWriter(MessageType::kGet, id)
                               .str(key)
                               .u64(static_cast<uint64_t>(timeout.count()))
                               .finish(),
                           Deadline::after(timeout + kReplyMargin), "get '" + key + "'");
  PayloadReader reader(reply, "get reply");
  bool found = reader.boolean();
  std::string value = reader.str();
  reader.finish();
  if (!found) return std::nullopt;
  return value;
}

int64_t ClientImpl::add(const std::string& key, int64_t delta) {
  uint64_t id = next_id();
  std::string reply =
      call(MessageType::kAdd, id, FrameWriter(MessageType::kAdd, id).str(key).i64(delta).finish(),
           Deadline::after(kReplyMargin), "add '" + key + "'");
  PayloadReader reader(reply, "add reply");
  int64_t value = reader.i64();
  reader.finish();
  return value;
}

bool ClientImpl::compare_and_swap(const std::string& key, const std::string& expected,
                                  const std::string& desired, bool expected_missing,
                                  std::string* current) {
  uint64_t id = next_id();
  std::string reply = call(MessageType::kCompareAndSwap, id,
                           FrameWriter(MessageType::kCompareAndSwap, id)
                               .str(key)
                               .str(expected)
                               .str(desired)
                               .u8(expected_missing)
                               .finish(),
                           Deadline::after(kReplyMargin), "compare-and-swap '" + key + "'");
  PayloadReader reader(reply, "compare-and-swap reply");
  bool swapped = reader.boolean();
  reader.boolean();  // current_exists: an empty *current means "missing" to callers of this API
  std::string value = reader.str();
  reader.finish();
  if (current != nullptr) *current = std::move(value);
  return swapped;
}

size_t ClientImpl::append(const std::string& key, const std::string& value) {
  uint64_t id = next_id();
  std::string reply = call(MessageType::kAppend, id,
                           FrameWriter(MessageType::kAppend, id).str(key).str(value).finish(),
                           Deadline::after(kReplyMargin), "append '" + key + "'");
  PayloadReader reader(reply, "append reply");
  uint64_t length = reader.u64();
  reader.finish();
  return static_cast<size_t>(length);
}

bool ClientImpl::remove(const std::string& key) {
  uint64_t id = next_id();
  std::string reply =
      call(MessageType::kRemove, id, FrameWriter(MessageType::kRemove, id).str(key).finish(),
           Deadline::after(kReplyMargin), "remove '" + key + "'");
  PayloadReader reader(reply, "remove reply");
  bool existed = reader.boolean();
  reader.finish();
  return existed;
}

size_t ClientImpl::remove_prefix(const std::string& prefix) {
  uint64_t id = next_id();
  std::string reply = call(MessageType::kRemovePrefix, id,
                           FrameWriter(MessageType::kRemovePrefix, id).str(prefix).finish(),
                           Deadline::after(kReplyMargin), "remove_prefix '" + prefix + "'");
  PayloadReader reader(reply, "remove-prefix reply");
  uint64_t removed = reader.u64();
  reader.finish();
  return static_cast<size_t>(removed);
}

WatchId ClientImpl::watch(MessageType type, const std::string& name, WatchCallback callback) {
  MEMLOOM_CHECK_ARG(callback != nullptr, "store watch: the callback is empty");
  WatchId watch_id = next_watch_id_.fetch_add(1);
  // Registered before the request so an event that follows the reply at once is not lost.
  events_->add(watch_id, std::move(callback));
  uint64_t id = next_id();
  try {
    call(type, id, FrameWriter(type, id).u64(watch_id).str(name).finish(),
         Deadline::after(kReplyMargin),
         std::string(type == MessageType::kWatchKey ? "watch_key '" : "watch_rank_down '") + name +
             "'");
  } catch (...) {
    events_->remove(watch_id);
    throw;
  }
  return watch_id;
}

WatchId ClientImpl::watch_key(const std::string& key, WatchCallback callback) {
  return watch(MessageType::kWatchKey, key, std::move(callback));
}

WatchId ClientImpl::watch_rank_down(const std::string& group, WatchCallback callback) {
  return watch(MessageType::kWatchRankDown, group, std::move(callback));
}

void ClientImpl::unwatch(WatchId watch_id) {
  events_->remove(watch_id);
  // Nothing to wait for: the server handles requests of one connection in order, and events for
  // an id without a callback are dropped. On a lost connection the server already forgot it.
  uint64_t id = next_id();
  asio::post(
      io_, [this, frame = FrameWriter(MessageType::kUnwatch, id).u64(watch_id).finish()]() mutable {
        if (channel_) channel_->send(std::move(frame));
      });
}

}  // namespace

void ClientOptions::check() const {
  MEMLOOM_CHECK_ARG(connect_timeout.count() >= 0,
                    "ClientOptions.connect_timeout must not be negative");
  MEMLOOM_CHECK_ARG(heartbeat_interval.count() > 0,
                    "ClientOptions.heartbeat_interval must be positive");
  MEMLOOM_CHECK_ARG(heartbeat_timeout > heartbeat_interval,
                    "ClientOptions.heartbeat_timeout must be longer than heartbeat_interval");
}

std::unique_ptr<Client> Client::connect(const std::string& url, const ClientOptions& options) {
  if (is_etcd_url(url)) return connect_etcd(url, options);
  auto client = std::make_unique<ClientImpl>(url, options);
  client->open();
  return client;
}

}  // namespace memloom::store
