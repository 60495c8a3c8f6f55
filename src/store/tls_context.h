// The OpenSSL context of a TLS store server or client: TLS 1.3 only, mutual authentication
// against the configured CAs, revocation checked when CRLs are given. Peers are identified by
// their CA, not by host name (store URLs are IP literals).
#pragma once

#include <memory>

#include "src/store/asio.h"
#include "src/store/tls_config.h"

#include <boost/asio/ssl.hpp>

namespace memloom::store {

enum class TlsRole { kServer, kClient };

// Loads every file now, so a wrong path or a key that does not match the certificate fails
// Server::start / Client::connect with memloom::Error(kInvalidInput) naming the file.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const TlsConfig& config, TlsRole role);

}  // namespace memloom::store
