#include "src/store/etcd_http.h"

#include <thread>

#include "memloom/error.h"
#include "src/base/interrupt_check.h"
#include "src/store/etcd_beast.h"
#include "src/store/etcd_stream.h"

namespace memloom::store::etcd {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

// Replies carry values of up to the store's limit, base64-encoded (4/3 larger).
constexpr uint64_t kMaxReplyBytes = 256ull << 20;
// Each member gets at least this long before the next is tried, and a call that has tried every
// member pauses this long before the next round.
constexpr milliseconds kMinAttemptTime{500};
constexpr milliseconds kRoundPause{50};

// gRPC status codes that etcd's gateway passes on (google.golang.org/grpc/codes).
constexpr int64_t kGrpcInvalidArgument = 3;
constexpr int64_t kGrpcDeadlineExceeded = 4;
constexpr int64_t kGrpcNotFound = 5;
constexpr int64_t kGrpcResourceExhausted = 8;
constexpr int64_t kGrpcUnavailable = 14;

struct Attempt {
  bool answered = false;  // an HTTP reply came back
  std::string failure;    // why not, or why the reply cannot be used
  bool refused = false;   // a TLS refusal or mismatch: trying again cannot help
  unsigned status = 0;
  std::string body;
};

}  // namespace

http::request<http::string_body> gateway_request(const EtcdEndpoint& endpoint,
                                                 const std::string& path, std::string body) {
  http::request<http::string_body> request{http::verb::post, path, 11};
  request.set(http::field::host, endpoint.to_string());
  request.set(http::field::content_type, "application/json");
  request.keep_alive(true);
  request.body() = std::move(body);
  request.prepare_payload();
  return request;
}

void async_connect_endpoint(beast::tcp_stream& stream, tcp::resolver& resolver,
                            const EtcdEndpoint& endpoint,
                            std::function<void(const boost::system::error_code&)> done) {
  boost::system::error_code error;
  auto address = asio::ip::make_address(endpoint.host, error);
  if (!error) {
    stream.async_connect(tcp::endpoint(address, endpoint.port),
                         [done](const boost::system::error_code& result) { done(result); });
    return;
  }
  resolver.async_resolve(
      endpoint.host, std::to_string(endpoint.port),
      [&stream, done](const boost::system::error_code& result, tcp::resolver::results_type found) {
        if (result) return done(result);
        stream.async_connect(found, [done](const boost::system::error_code& connected,
                                           const tcp::endpoint&) { done(connected); });
      });
}

// One keep-alive connection; used by one call at a time. Each exchange runs the connection's own
// io_context until the exchange completes; the stream's expiry bounds every step (the TLS
// handshake's too).
class HttpConnection {
 public:
  explicit HttpConnection(EtcdTls tls) : tls_(std::move(tls)) {}

  Attempt exchange(size_t endpoint_index, const EtcdEndpoint& endpoint, const std::string& path,
                   const std::string& body, Clock::time_point until) {
    Attempt attempt;
    if (stream_ && endpoint_ != endpoint_index) close();
    boost::system::error_code error;
    bool reused = stream_.has_value();
    if (!reused) {
      stream_.emplace(io_, tls_);
      endpoint_ = endpoint_index;
      stream_->tcp().expires_at(until);
      std::optional<StreamFailure> failure;
      stream_->async_open(resolver_, endpoint, [&](std::optional<StreamFailure> result) {
        failure = std::move(result);
      });
      run(until);
      if (failure) return fail(attempt, *failure);
    }
    auto request = gateway_request(endpoint, path, body);
    stream_->tcp().expires_at(until);
    http::async_write(*stream_, request,
                      [&](const boost::system::error_code& result, size_t) { error = result; });
    run(until);
    if (error) {
      StreamFailure failure = EtcdStream::describe(error);
      add_https_hint(error, failure);
      return fail(attempt, failure, "cannot send: ");
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxReplyBytes);
    parser.header_limit(64 * 1024);
    http::async_read(*stream_, buffer_, parser,
                     [&](const boost::system::error_code& result, size_t) { error = result; });
    run(until);
    if (error) {
      StreamFailure failure = EtcdStream::describe(error);
      add_https_hint(error, failure);
      return fail(attempt, failure, "no reply: ");
    }
    auto& response = parser.get();
    attempt.answered = true;
    attempt.status = response.result_int();
    attempt.body = std::move(response.body());
    if (!response.keep_alive()) close();
    return attempt;
  }

  void close() {
    if (!stream_) return;
    stream_->close();
    stream_.reset();
    buffer_.clear();
    io_.restart();
    io_.poll();  // completes the cancelled handlers of the closed stream
  }

  ~HttpConnection() { close(); }

 private:
  // An etcd that serves HTTPS answers a plain request with silence, or closes (or resets) the
  // connection once its TLS handshake fails on the request's first bytes, as etcd 3.4's TLS
  // listener does; which one a client sees depends on timing. It is the likely cause of each.
  void add_https_hint(const boost::system::error_code& error, StreamFailure& failure) const {
    if (tls_) return;
    const bool closed = error == http::error::end_of_stream || error == asio::error::eof ||
                        error == asio::error::connection_reset || error == asio::error::broken_pipe;
    if (error == beast::error::timeout || closed)
      failure.reason += " (if the member serves HTTPS, turn the store's TLS on for this client)";
  }
  Attempt& fail(Attempt& attempt, const StreamFailure& failure, const std::string& step = "") {
    attempt.failure = step + failure.reason;
    attempt.refused = failure.refused;
    close();
    return attempt;
  }
  // The stream's expiry ends every operation by `until`; the margin only covers the resolver,
  // which the expiry does not reach.
  // Between slices the caller's interrupt check is asked (memloom/interrupt.h): a Ctrl-C reaches
  // a caller whose member stopped answering. Interrupted, the exchange's operations are cancelled
  // and the connection closed before the error leaves.
  void run(Clock::time_point until) {
    io_.restart();
    const Clock::time_point end = until + milliseconds(200);
    try {
      base::wait_in_slices(end, [&](auto slice_end) {
        io_.run_until(slice_end);
        return io_.stopped();
      });
    } catch (const Error&) {
      cancel_pending();
      close();
      throw;
    }
    if (!io_.stopped()) cancel_pending();
  }
  void cancel_pending() {
    resolver_.cancel();
    if (stream_) stream_->tcp().cancel();
    io_.restart();
    io_.run();
  }

  const EtcdTls tls_;
  asio::io_context io_{1};
  tcp::resolver resolver_{io_};
  std::optional<EtcdStream> stream_;
  size_t endpoint_ = 0;
  beast::flat_buffer buffer_;
};

EtcdHttp::EtcdHttp(std::vector<EtcdEndpoint> endpoints, EtcdTls tls)
    : endpoints_(std::move(endpoints)), tls_(std::move(tls)) {
  MEMLOOM_CHECK_ARG(!endpoints_.empty(), "etcd client: no endpoints");
}

EtcdHttp::~EtcdHttp() = default;

std::string EtcdHttp::url() const {
  return EtcdUrl{endpoints_}.to_string();
}

void EtcdHttp::prefer_next_after(size_t failed) {
  size_t expected = failed;
  preferred_.compare_exchange_strong(expected, (failed + 1) % endpoints_.size());
}

std::unique_ptr<HttpConnection> EtcdHttp::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.empty()) return std::make_unique<HttpConnection>(tls_);
  auto connection = std::move(idle_.back());
  idle_.pop_back();
  return connection;
}

void EtcdHttp::release(std::unique_ptr<HttpConnection> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(connection));
}

JsonValue EtcdHttp::call(const std::string& path, const std::string& body, Deadline deadline,
                         const std::string& what) {
  auto connection = acquire();
  std::vector<std::string> failures(endpoints_.size());
  bool any_answered = false;
  size_t index = preferred_.load();
  size_t tried_this_round = 0;
  size_t refused_in_row = 0;
  while (true) {
    // Share what is left between the members not yet tried in this round, so that one member
    // that swallows requests (stopped, partitioned) cannot use up the whole deadline.
    auto left = deadline.remaining();
    auto share = left / static_cast<int64_t>(endpoints_.size() - tried_this_round);
    auto until = Clock::now() + std::min(left, std::max(share, kMinAttemptTime));
    Attempt attempt = connection->exchange(index, endpoints_[index], path, body, until);
    std::string refusal;
    if (attempt.answered) {
      any_answered = true;
      std::string parse_error;
      auto reply = parse_json(attempt.body, &parse_error);
      if (!reply) {
        attempt.failure =
            "an unreadable reply (HTTP " + std::to_string(attempt.status) + "): " + parse_error;
      } else if (attempt.status == 200 && reply->find("error") == nullptr) {
        preferred_.store(index);
        release(std::move(connection));
        return std::move(*reply);
      } else {
        auto code = json_int(reply->find("code")).value_or(-1);
        std::string message = json_string(reply->find("message"));
        if (message.empty()) message = json_string(reply->find("error"));
        if (code != kGrpcUnavailable && code != kGrpcDeadlineExceeded) {
          release(std::move(connection));
          // ResourceExhausted is both "this request is over gRPC's size limit" (the caller's
          // fault, as an over-size value is with the TCP store) and "the database is full".
          bool too_large = message.find("larger than max") != std::string::npos ||
                           message.find("too large") != std::string::npos;
          Status status = code == kGrpcInvalidArgument || too_large ? Status::kInvalidInput
                          : code == kGrpcResourceExhausted          ? Status::kOutOfMemory
                          : code == kGrpcNotFound                   ? Status::kNotFound
                                                                    : Status::kCommunication;
          raise(status, "store " + what + " refused by etcd at " + endpoints_[index].to_string() +
                            ": " + message);
        }
        attempt.failure = message;  // this member cannot serve now: the next may
        connection->close();
      }
    }
    failures[index] = attempt.failure;
    prefer_next_after(index);
    // As with the TCP store, a refused TLS connection is final: when every member refused,
    // waiting out the deadline would only delay the same answer.
    refused_in_row = attempt.refused ? refused_in_row + 1 : 0;
    if (refused_in_row >= endpoints_.size() || deadline.expired()) break;
    index = (index + 1) % endpoints_.size();
    if (++tried_this_round == endpoints_.size()) {
      tried_this_round = 0;
      std::this_thread::sleep_for(std::min(kRoundPause, deadline.remaining()));
    }
  }
  std::string tried;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (failures[i].empty()) continue;
    tried += (tried.empty() ? "" : "; ") + endpoints_[i].to_string() + ": " + failures[i];
  }
  if (refused_in_row >= endpoints_.size())
    raise(Status::kCommunication, "store " + what + ": every etcd member of " + url() +
                                      " refused the connection (" + tried + ")");
  raise(any_answered ? Status::kTimeout : Status::kCommunication,
        "store " + what + ": no etcd member of " + url() + " served it in time (" + tried + ")");
}

}  // namespace memloom::store::etcd
