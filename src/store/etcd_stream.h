// The byte stream to one etcd member: plain TCP, or HTTPS with a client certificate when the
// client's store TLS is on. Either way it is one Beast async stream, so unary calls
// (etcd_http.cpp) and watches (etcd_watch.cpp) run the same HTTP code over both.
//
// TLS reuses the TCP store's context (tls_context.h: the same CA, certificate, key and CRL
// settings, TLS 1.3 only) and checks in addition that the member's certificate was issued for the
// host name or IP address of its endpoint, as etcd's own clients do: etcd URLs name hosts, and
// etcd certificates carry them (etcd's gateway checks its own certificate the same way).
//
// Not thread-safe: one operation at a time, on the io_context's thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "src/store/etcd_beast.h"
#include "src/store/tls_config.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace memloom::store::etcd {

// The client TLS context of an etcd client; nullptr speaks plain HTTP.
using EtcdTls = std::shared_ptr<asio::ssl::context>;

// Builds the context `setting` resolves to (nullptr when TLS is off). Throws like
// make_tls_context (kInvalidInput naming an unreadable or unusable file).
EtcdTls make_etcd_tls(const TlsSetting& setting);

// Why an open or an exchange failed, and whether trying again cannot help: the member (or this
// client) refused the other's certificate, or one side speaks TLS and the other does not.
struct StreamFailure {
  std::string reason;
  bool refused = false;
};

class EtcdStream {
 public:
  using executor_type = beast::tcp_stream::executor_type;

  EtcdStream(asio::io_context& io, EtcdTls tls);

  // The TCP layer: its expiry bounds every operation, the TLS handshake's included.
  beast::tcp_stream& tcp() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  executor_type get_executor() { return tcp().get_executor(); }

  // Connects to `endpoint` (resolving a host name) and, with TLS, runs the handshake; `done` gets
  // nullopt on success. Bounded by tcp()'s expiry, set by the caller. `resolver` must outlive it.
  void async_open(tcp::resolver& resolver, const EtcdEndpoint& endpoint,
                  std::function<void(std::optional<StreamFailure>)> done);

  // Describes an error of a read or write after the open ("timed out", "etcd refused this
  // client's certificate (...)").
  static StreamFailure describe(const boost::system::error_code& error);

  void close();

  // Beast's AsyncReadStream / AsyncWriteStream.
  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    else
      plain_->async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    else
      plain_->async_write_some(buffers, std::forward<Handler>(handler));
  }

 private:
  void handshake(const EtcdEndpoint& endpoint,
                 std::function<void(std::optional<StreamFailure>)> done);

  EtcdTls context_;  // outlives the stream's SSL object
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
};

}  // namespace memloom::store::etcd
