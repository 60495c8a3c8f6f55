// One store connection seen as a sequence of frames. The server's sessions and the client see
// only the FrameConnection interface; FrameChannel<Stream> implements it over any Asio byte
// stream: tcp::socket for plain TCP, asio::ssl::stream<tcp::socket> once a TLS handshake
// finished (tls_handshake.h), so framing, limits, liveness and error handling stay on one code
// path.
//
// Not thread-safe: every member runs on the stream's executor (one thread in the server and in the
// client). Asynchronous operations hold a shared_ptr to the channel, so it lives until they end.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "memloom/error.h"
#include "src/store/asio.h"
#include "src/store/protocol.h"

#include <boost/asio/ssl/error.hpp>

namespace memloom::store {

class FrameConnection {
 public:
  using Clock = std::chrono::steady_clock;
  // A complete, header-checked frame. Throwing memloom::Error from it closes the connection with
  // the error's message (that is how payload decoding errors end a connection).
  using FrameHandler = std::function<void(const protocol::FrameHeader&, std::string&& payload)>;
  // Runs once, asynchronously (posted), after the connection closed for any reason.
  using CloseHandler = std::function<void(const std::string& reason)>;

  virtual ~FrameConnection() = default;
  virtual void start(FrameHandler on_frame, CloseHandler on_close) = 0;
  // Queues a complete frame (from protocol::FrameWriter). Dropped silently once closed: the
  // close handler is how the owner learns the peer is gone.
  virtual void send(std::string frame) = 0;
  // Idempotent. Pending reads and writes are cancelled; queued frames are dropped.
  virtual void close(const std::string& reason) = 0;
  // Drops both handlers without calling them, breaking the owner <-> connection reference cycle
  // when the executor is stopped before the close handler could run (shutdown).
  virtual void detach() = 0;
  virtual bool is_open() const = 0;
  virtual size_t queued_bytes() const = 0;
  virtual void set_max_incoming_frame_bytes(size_t bytes) = 0;
  // When the last header or payload chunk arrived (or the connection started): liveness checks
  // use it, so a peer busy sending one large frame is not mistaken for a silent one.
  virtual Clock::time_point last_activity() const = 0;
  // "tcp://IP:PORT" of the other side, for log messages.
  virtual const std::string& remote() const = 0;
};

template <class Stream>
class FrameChannel final : public FrameConnection,
                           public std::enable_shared_from_this<FrameChannel<Stream>> {
 public:
  static constexpr size_t kReadChunkBytes = size_t{1} << 20;

  FrameChannel(Stream stream, size_t max_incoming_frame_bytes, std::string remote)
      : stream_(std::move(stream)),
        max_incoming_(max_incoming_frame_bytes),
        remote_(std::move(remote)) {}

  void start(FrameHandler on_frame, CloseHandler on_close) override {
    on_frame_ = std::move(on_frame);
    on_close_ = std::move(on_close);
    read_header();
  }

  void send(std::string frame) override {
    if (closed_) return;
    queued_bytes_ += frame.size();
    outbox_.push_back(std::move(frame));
    if (outbox_.size() == 1) write_next();
  }

  void close(const std::string& reason) override {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    stream_.lowest_layer().shutdown(boost::asio::socket_base::shutdown_both, ignored);
    stream_.lowest_layer().close(ignored);
    outbox_.clear();
    queued_bytes_ = 0;
    // Posted so that a frame handler may close its own channel without re-entering the owner.
    boost::asio::post(stream_.get_executor(), [self = this->shared_from_this(), reason] {
      CloseHandler on_close = std::move(self->on_close_);
      self->on_frame_ = nullptr;
      if (on_close) on_close(reason);
    });
  }

  void detach() override {
    on_frame_ = nullptr;
    on_close_ = nullptr;
  }

  bool is_open() const override { return !closed_; }
  Clock::time_point last_activity() const override { return last_activity_; }
  const std::string& remote() const override { return remote_; }
  size_t queued_bytes() const override { return queued_bytes_; }
  void set_max_incoming_frame_bytes(size_t bytes) override { max_incoming_ = bytes; }
  Stream& stream() { return stream_; }

 private:
  void read_header() {
    boost::asio::async_read(
        stream_, boost::asio::buffer(header_bytes_),
        [self = this->shared_from_this()](const boost::system::error_code& error, size_t) {
          if (self->closed_) return;
          if (error) return self->close(describe_read_error(error, "a frame header"));
          self->last_activity_ = Clock::now();
          try {
            self->header_ = protocol::decode_header(self->header_bytes_, self->max_incoming_);
          } catch (const Error& violation) {
            return self->close(violation.what());
          }
          self->read_payload();
        });
  }

  // The payload is read in chunks and the buffer grows as bytes arrive, so a header that only
  // claims a large frame costs no memory, and a large frame in transit counts as activity.
  void read_payload() {
    payload_.clear();
    if (header_.payload_bytes == 0) return deliver();
    read_payload_chunk();
  }

  void read_payload_chunk() {
    size_t offset = payload_.size();
    size_t chunk = std::min(kReadChunkBytes, header_.payload_bytes - offset);
    payload_.resize(offset + chunk);
    boost::asio::async_read(
        stream_, boost::asio::buffer(payload_.data() + offset, chunk),
        [self = this->shared_from_this()](const boost::system::error_code& error, size_t) {
          if (self->closed_) return;
          if (is_peer_close(error)) {
            return self->close("the peer closed the connection in the middle of a frame");
          }
          if (error) return self->close(describe_read_error(error, "a frame payload"));
          self->last_activity_ = Clock::now();
          if (self->payload_.size() < self->header_.payload_bytes)
            return self->read_payload_chunk();
          self->deliver();
        });
  }

  void deliver() {
    try {
      on_frame_(header_, std::move(payload_));
    } catch (const Error& failure) {
      return close(failure.what());
    }
    payload_.clear();
    if (!closed_) read_header();
  }

  void write_next() {
    boost::asio::async_write(
        stream_, boost::asio::buffer(outbox_.front()),
        [self = this->shared_from_this()](const boost::system::error_code& error, size_t) {
          if (self->closed_) return;
          if (error) return self->close("write failed: " + error.message());
          self->queued_bytes_ -= self->outbox_.front().size();
          self->outbox_.pop_front();
          if (!self->outbox_.empty()) self->write_next();
        });
  }

  // A TLS peer that closes its socket without a close_notify alert reads as "stream truncated";
  // frames carry their own lengths, so for the store that is a plain close too.
  static bool is_peer_close(const boost::system::error_code& error) {
    return error == boost::asio::error::eof || error == boost::asio::ssl::error::stream_truncated;
  }

  static std::string describe_read_error(const boost::system::error_code& error, const char* what) {
    if (is_peer_close(error)) return "the peer closed the connection";
    return std::string("reading ") + what + " failed: " + error.message();
  }

  Stream stream_;
  size_t max_incoming_;
  std::string remote_;
  FrameHandler on_frame_;
  CloseHandler on_close_;
  protocol::HeaderBytes header_bytes_{};
  protocol::FrameHeader header_;
  std::string payload_;
  std::deque<std::string> outbox_;
  size_t queued_bytes_ = 0;
  bool closed_ = false;
  Clock::time_point last_activity_ = Clock::now();
};

// A plain TCP connection (TCP_NODELAY: frames are small and latency-bound).
std::shared_ptr<FrameConnection> make_tcp_connection(boost::asio::ip::tcp::socket socket,
                                                     size_t max_incoming_frame_bytes);

}  // namespace memloom::store
