#include "src/store/etcd_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "memloom/error.h"
#include "src/store/tls_context.h"
#include "src/store/tls_openssl_error.h"

namespace memloom::store::etcd {
namespace {

bool is_ssl_error(const boost::system::error_code& error) {
  return error.category() == asio::error::get_ssl_category();
}

// A TLS alert the member sent about this client's certificate (missing, unknown CA, revoked,
// expired...): OpenSSL reports a received alert as SSL_AD_REASON_OFFSET + its code.
bool is_certificate_alert(const boost::system::error_code& error) {
  if (!is_ssl_error(error)) return false;
  int alert = ERR_GET_REASON(static_cast<unsigned long>(error.value())) - SSL_AD_REASON_OFFSET;
  return (alert >= SSL_AD_BAD_CERTIFICATE && alert <= SSL_AD_UNKNOWN_CA) ||
         alert == SSL_AD_CERTIFICATE_REQUIRED || alert == SSL_AD_ACCESS_DENIED;
}

}  // namespace

EtcdTls make_etcd_tls(const TlsSetting& setting) {
  auto config = setting.resolve();
  if (!config) return nullptr;
  return make_tls_context(*config, TlsRole::kClient);
}

EtcdStream::EtcdStream(asio::io_context& io, EtcdTls tls) : context_(std::move(tls)) {
  if (context_)
    tls_.emplace(io, *context_);
  else
    plain_.emplace(io);
}

void EtcdStream::async_open(tcp::resolver& resolver, const EtcdEndpoint& endpoint,
                            std::function<void(std::optional<StreamFailure>)> done) {
  async_connect_endpoint(tcp(), resolver, endpoint,
                         [this, endpoint, done](const boost::system::error_code& error) {
                           if (error) {
                             StreamFailure failure = describe(error);
                             failure.reason = "cannot connect: " + failure.reason;
                             failure.refused = false;  // a member starting up refuses too
                             return done(failure);
                           }
                           if (!tls_) return done(std::nullopt);
                           handshake(endpoint, done);
                         });
}

void EtcdStream::handshake(const EtcdEndpoint& endpoint,
                           std::function<void(std::optional<StreamFailure>)> done) {
  SSL* ssl = tls_->native_handle();
  boost::system::error_code not_ip;
  asio::ip::make_address(endpoint.host, not_ip);
  bool named = false;
  if (not_ip) {
    // A host name: sent as SNI (a member behind a proxy may serve several) and checked.
    named = SSL_set_tlsext_host_name(ssl, endpoint.host.c_str()) == 1 &&
            SSL_set1_host(ssl, endpoint.host.c_str()) == 1;
  } else {
    named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint.host.c_str()) == 1;
  }
  if (!named) {
    std::string reasons = take_openssl_errors();
    return done(StreamFailure{"cannot check the certificate against '" + endpoint.host +
                                  "': " + (reasons.empty() ? "refused by OpenSSL" : reasons),
                              true});
  }
  tls_->async_handshake(asio::ssl::stream_base::client,
                        [this, host = endpoint.host, done](const boost::system::error_code& error) {
                          if (!error) return done(std::nullopt);
                          StreamFailure failure;
                          long verify = SSL_get_verify_result(tls_->native_handle());
                          if (verify != X509_V_OK && is_ssl_error(error)) {
                            failure.reason =
                                std::string(
                                    "the TLS handshake failed: this client refused the "
                                    "member's certificate (") +
                                X509_verify_cert_error_string(verify) +
                                "; it must chain to the store's CA and name '" + host + "')";
                            failure.refused = true;
                          } else {
                            failure = describe(error);
                            failure.reason = "the TLS handshake failed: " + failure.reason;
                          }
                          ERR_clear_error();  // the reasons are in `failure`; leave the queue clean
                          done(failure);
                        });
}

StreamFailure EtcdStream::describe(const boost::system::error_code& error) {
  if (error == beast::error::timeout) return {"timed out", false};
  if (is_certificate_alert(error))
    return {"etcd refused this client's certificate (" + error.message() + ")", true};
  // Any other TLS error is a protocol fault (one side does not speak TLS, no common version):
  // it happens again on every attempt.
  if (is_ssl_error(error)) return {error.message() + " (does this member speak TLS 1.3?)", true};
  return {error.message(), false};
}

void EtcdStream::close() {
  // No close_notify: the connection carries nothing more, and the member may be gone.
  boost::system::error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp().close();
}

}  // namespace memloom::store::etcd
