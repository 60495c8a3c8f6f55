// The TLS handshake of one store connection, bounded by a deadline: a peer that connects and
// never finishes the handshake is dropped when it passes, without holding up anyone else. On
// success the encrypted stream becomes a FrameChannel, so everything after the handshake runs on
// the same code path as plain TCP.
//
// Not thread-safe: runs on the socket's executor, like FrameChannel.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "src/store/frame_channel.h"
#include "src/store/tls_context.h"

namespace memloom::store {

class TlsHandshake : public std::enable_shared_from_this<TlsHandshake> {
 public:
  // Exactly one of connection / error is set.
  using Done =
      std::function<void(std::shared_ptr<FrameConnection> connection, const std::string& error)>;

  // `done` runs once, on the socket's executor, unless cancel() comes first.
  static std::shared_ptr<TlsHandshake> start(boost::asio::ip::tcp::socket socket,
                                             std::shared_ptr<boost::asio::ssl::context> context,
                                             TlsRole role, std::chrono::milliseconds timeout,
                                             size_t max_incoming_frame_bytes, Done done);
  // Closes the socket; `done` is not called.
  void cancel();

  using Stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  TlsHandshake(boost::asio::ip::tcp::socket socket,
               std::shared_ptr<boost::asio::ssl::context> context, size_t max_incoming_frame_bytes,
               Done done);

 private:
  void run(TlsRole role, std::chrono::milliseconds timeout);
  void finish(const boost::system::error_code& error);
  std::string describe(const boost::system::error_code& error);
  void close_socket();

  std::shared_ptr<boost::asio::ssl::context> context_;  // outlives the stream's SSL object
  std::optional<Stream> stream_;
  boost::asio::steady_timer timer_;
  size_t max_incoming_;
  Done done_;
  std::string remote_;
  std::chrono::milliseconds timeout_{0};
  bool timed_out_ = false;
  bool finished_ = false;
};

}  // namespace memloom::store
