#include "src/store/etcd_watch.h"

#include "src/base/log.h"
#include "src/store/etcd_beast.h"
#include "src/store/etcd_json.h"
#include "src/store/etcd_stream.h"

namespace memloom::store::etcd {
namespace {

using std::chrono::milliseconds;

// The pause before reconnecting grows to this (a whole cluster down must not be hammered).
constexpr milliseconds kMaxReconnectPause{1000};
constexpr milliseconds kConnectTime{2000};
constexpr size_t kMaxMessageBytes = 512u << 20;

class WatchStreamImpl : public WatchStream, public std::enable_shared_from_this<WatchStreamImpl> {
 public:
  WatchStreamImpl(asio::io_context& io, std::vector<EtcdEndpoint> endpoints, EtcdTls tls,
                  size_t first, std::string key, std::string range_end, int64_t start_revision,
                  OnEvents on_events, OnUnreachable on_unreachable)
      : io_(io),
        endpoints_(std::move(endpoints)),
        tls_(std::move(tls)),
        endpoint_(first % endpoints_.size()),
        key_(std::move(key)),
        range_end_(std::move(range_end)),
        next_revision_(start_revision),
        on_events_(std::move(on_events)),
        on_unreachable_(std::move(on_unreachable)),
        timer_(io) {}

  void connect() {
    if (cancelled_) return;
    stream_.emplace(io_, tls_);
    resolver_.emplace(io_);
    pending_.clear();
    buffer_.clear();  // bytes of the broken stream are no part of the new one
    stream_->tcp().expires_after(kConnectTime);  // the TLS handshake's too
    auto self = shared_from_this();
    stream_->async_open(*resolver_, endpoints_[endpoint_],
                        [self](std::optional<StreamFailure> failure) {
                          if (failure) return self->broken(failure->reason);
                          self->send();
                        });
  }

  void cancel() override {
    cancelled_ = true;
    timer_.cancel();
    if (resolver_) resolver_->cancel();
    if (stream_) stream_->close();
  }

 private:
  void send() {
    if (cancelled_) return;
    JsonObject create;
    create.bytes("key", key_);
    if (!range_end_.empty()) create.bytes("range_end", range_end_);
    create.integer("start_revision", next_revision_);
    request_ = gateway_request(endpoints_[endpoint_], "/v3/watch",
                               JsonObject().raw("create_request", create.finish()).finish());
    auto self = shared_from_this();
    http::async_write(*stream_, request_, [self](const boost::system::error_code& error, size_t) {
      if (error) return self->broken("cannot send: " + EtcdStream::describe(error).reason);
      self->read();
    });
  }

  void read() {
    if (cancelled_) return;
    stream_->tcp().expires_never();  // a watch is silent until something changes
    parser_.emplace();
    parser_->body_limit(kMaxMessageBytes);
    parser_->on_chunk_body(chunk_body_);
    auto self = shared_from_this();
    http::async_read(
        *stream_, buffer_, *parser_, [self](const boost::system::error_code& error, size_t) {
          if (error)
            return self->broken("the watch stream ended: " + EtcdStream::describe(error).reason);
          std::string body = self->parser_->get().body();
          self->broken("etcd ended the watch: " + body.substr(0, 200));
        });
  }

  void on_data(std::string_view data) {
    pending_.append(data);
    size_t newline;
    while (!cancelled_ && (newline = pending_.find('\n')) != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      if (line.find_first_not_of(" \r\t") != std::string::npos) on_message(line);
    }
  }

  void on_message(const std::string& line) {
    std::string error;
    auto message = parse_json(line, &error);
    const JsonValue* result = message ? message->find("result") : nullptr;
    if (result == nullptr) {
      MEMLOOM_LOG(kWarn, "etcd watch: unusable message from " << endpoints_[endpoint_].to_string()
                                                              << ": " << line.substr(0, 200));
      return;
    }
    failed_in_row_ = 0;
    pause_ = milliseconds(50);  // this member serves: a later break starts the backoff afresh
    failures_.clear();
    std::vector<KvEvent> events;
    if (const JsonValue* list = result->find("events")) {
      for (const JsonValue& item : list->items) {
        const JsonValue* kv = item.find("kv");
        KvEvent event;
        event.deleted = json_string(item.find("type")) == "DELETE";
        auto key = json_bytes(kv ? kv->find("key") : nullptr);
        auto value = json_bytes(kv ? kv->find("value") : nullptr);
        auto revision = json_int(kv ? kv->find("mod_revision") : nullptr);
        if (!key || !value || !revision) continue;
        event.key = std::move(*key);
        event.value = std::move(*value);
        event.revision = *revision;
        if (event.revision >= next_revision_) next_revision_ = event.revision + 1;
        events.push_back(std::move(event));
      }
    }
    if (result->find("canceled") != nullptr) {
      // Compaction passed the revision asked for: resume at the compacted one (the events before
      // it are gone from etcd; a store job's lifetime normally stays far from compaction).
      if (auto compacted = json_int(result->find("compact_revision")); compacted && *compacted)
        next_revision_ = *compacted;
      if (stream_) stream_->close();
    }
    if (!events.empty()) on_events_(events);
  }

  void broken(const std::string& reason) {
    if (cancelled_) return;
    if (stream_) stream_->close();
    MEMLOOM_LOG(kDebug, "etcd watch on " << endpoints_[endpoint_].to_string() << ": " << reason
                                         << "; reconnecting");
    failures_ +=
        (failures_.empty() ? "" : "; ") + endpoints_[endpoint_].to_string() + ": " + reason;
    if (++failed_in_row_ % endpoints_.size() == 0 && on_unreachable_) {
      on_unreachable_(failures_);
      if (cancelled_) return;
      failures_.clear();
    }
    endpoint_ = (endpoint_ + 1) % endpoints_.size();
    timer_.expires_after(pause_);
    pause_ = std::min(pause_ * 2, kMaxReconnectPause);
    auto self = shared_from_this();
    timer_.async_wait([self](const boost::system::error_code& error) {
      if (!error) self->connect();
    });
  }

  asio::io_context& io_;
  const std::vector<EtcdEndpoint> endpoints_;
  const EtcdTls tls_;
  size_t endpoint_;
  const std::string key_;
  const std::string range_end_;
  int64_t next_revision_;
  OnEvents on_events_;
  OnUnreachable on_unreachable_;
  std::string failures_;  // why the members failed since one last served
  size_t failed_in_row_ = 0;
  asio::steady_timer timer_;
  std::optional<EtcdStream> stream_;
  std::optional<tcp::resolver> resolver_;
  http::request<http::string_body> request_;
  std::optional<http::response_parser<http::string_body>> parser_;
  beast::flat_buffer buffer_;
  std::string pending_;
  // Beast keeps a reference to the callback; the read's handler keeps this object alive.
  std::function<size_t(uint64_t, boost::string_view, boost::system::error_code&)> chunk_body_ =
      [this](uint64_t, boost::string_view data, boost::system::error_code&) {
        on_data(std::string_view(data.data(), data.size()));
        return data.size();
      };
  milliseconds pause_{50};
  bool cancelled_ = false;
};

}  // namespace

std::shared_ptr<WatchStream> WatchStream::start(asio::io_context& io,
                                                std::vector<EtcdEndpoint> endpoints, EtcdTls tls,
                                                size_t first_endpoint, std::string key,
                                                std::string range_end, int64_t start_revision,
                                                OnEvents on_events, OnUnreachable on_unreachable) {
  auto stream = std::make_shared<WatchStreamImpl>(
      io, std::move(endpoints), std::move(tls), first_endpoint, std::move(key),
      std::move(range_end), start_revision, std::move(on_events), std::move(on_unreachable));
  asio::post(io, [stream] { stream->connect(); });
  return stream;
}

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xFF) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key: etcd's "\0" range end
}

}  // namespace memloom::store::etcd
