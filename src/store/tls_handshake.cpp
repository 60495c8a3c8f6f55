#include "src/store/tls_handshake.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "src/store/url.h"

namespace memloom::store {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string remote_url(const tcp::socket& socket) {
  boost::system::error_code error;
  auto endpoint = socket.remote_endpoint(error);
  return error ? std::string("tcp://?")
               : format_tcp_url(endpoint.address().to_string(), endpoint.port());
}

}  // namespace

TlsHandshake::TlsHandshake(tcp::socket socket, std::shared_ptr<asio::ssl::context> context,
                           size_t max_incoming_frame_bytes, Done done)
    : context_(std::move(context)),
      timer_(socket.get_executor()),
      max_incoming_(max_incoming_frame_bytes),
      done_(std::move(done)),
      remote_(remote_url(socket)) {
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  stream_.emplace(std::move(socket), *context_);
}

std::shared_ptr<TlsHandshake> TlsHandshake::start(tcp::socket socket,
                                                  std::shared_ptr<asio::ssl::context> context,
                                                  TlsRole role, std::chrono::milliseconds timeout,
                                                  size_t max_incoming_frame_bytes, Done done) {
  auto handshake = std::make_shared<TlsHandshake>(std::move(socket), std::move(context),
                                                  max_incoming_frame_bytes, std::move(done));
  handshake->run(role, timeout);
  return handshake;
}

void TlsHandshake::run(TlsRole role, std::chrono::milliseconds timeout) {
  timeout_ = timeout;
  timer_.expires_after(timeout);
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    auto self = weak.lock();
    if (error || !self || self->finished_) return;
    self->timed_out_ = true;
    self->close_socket();  // completes the handshake with an error
  });
  stream_->async_handshake(
      role == TlsRole::kServer ? asio::ssl::stream_base::server : asio::ssl::stream_base::client,
      [self = shared_from_this()](const boost::system::error_code& error) { self->finish(error); });
}

void TlsHandshake::finish(const boost::system::error_code& error) {
  timer_.cancel();
  if (finished_) return;  // cancelled
  finished_ = true;
  Done done = std::move(done_);
  if (error || timed_out_) {
    std::string reason = describe(error);
    close_socket();
    ERR_clear_error();  // the reasons are in `reason`; leave the queue clean for the next user
    return done(nullptr, reason);
  }
  auto channel =
      std::make_shared<FrameChannel<Stream>>(std::move(*stream_), max_incoming_, remote_);
  stream_.reset();
  done(std::move(channel), std::string());
}

std::string TlsHandshake::describe(const boost::system::error_code& error) {
  std::string what = "the TLS handshake with " + remote_;
  if (timed_out_) {
    return what + " did not finish within " + std::to_string(timeout_.count()) + " ms";
  }
  std::string reason = what + " failed: " + error.message();
  // A refused certificate says why (revoked, unknown CA, expired...).
  long verify = SSL_get_verify_result(stream_->native_handle());
  if (verify != X509_V_OK) {
    reason +=
        std::string(" (the peer's certificate: ") + X509_verify_cert_error_string(verify) + ")";
  }
  return reason;
}

void TlsHandshake::cancel() {
  finished_ = true;
  done_ = nullptr;
  timer_.cancel();
  close_socket();
}

void TlsHandshake::close_socket() {
  if (!stream_) return;
  boost::system::error_code ignored;
  stream_->lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
  stream_->lowest_layer().close(ignored);
}

}  // namespace memloom::store
