#include "src/store/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/store/tls_openssl_error.h"

namespace memloom::store {
namespace {

namespace ssl = boost::asio::ssl;

// OpenSSL's own message for a missing file is a bare "system lib"; this names the file.
void check_readable(const char* what, const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) {
    int error = errno;
    raise(Status::kInvalidInput,
          std::string("TLS ") + what + " '" + path + "' cannot be read: " + std::strerror(error));
  }
}

void load_crls(SSL_CTX* context, const std::vector<std::string>& crl_files) {
  X509_STORE* store = SSL_CTX_get_cert_store(context);
  X509_LOOKUP* lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file());
  if (lookup == nullptr) raise_openssl(Status::kSystem, "cannot prepare the CRL lookup");
  for (const std::string& file : crl_files) {
    check_readable("CRL file", file);
    if (X509_load_crl_file(lookup, file.c_str(), X509_FILETYPE_PEM) <= 0) {
      raise_openssl(Status::kInvalidInput, "cannot load the CRL file '" + file + "'");
    }
  }
  // Leaf certificates are checked against their issuer's CRL; a CA without one makes every
  // certificate it issued fail verification, which is the safe side.
  if (X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK) != 1) {
    raise_openssl(Status::kSystem, "cannot enable CRL checking");
  }
}

}  // namespace

std::shared_ptr<ssl::context> make_tls_context(const TlsConfig& config, TlsRole role) {
  MEMLOOM_CHECK_ARG(config.key != nullptr,
                    "TLS for the config store needs a private key (smem_set_config_store_tls_key)");
  MEMLOOM_CHECK_ARG(!config.files.ca_files.empty(), "TLS for the config store needs a CA file");
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(
      role == TlsRole::kServer ? ssl::context::tls_server : ssl::context::tls_client);
  SSL_CTX* native = context->native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION) != 1) {
    raise_openssl(Status::kSystem, "cannot restrict TLS to version 1.3");
  }
  // Clients never resume sessions (one long-lived connection each): no tickets to send.
  if (role == TlsRole::kServer) SSL_CTX_set_num_tickets(native, 0);

  for (const std::string& file : config.files.ca_files) {
    check_readable("CA file", file);
    if (SSL_CTX_load_verify_file(native, file.c_str()) != 1) {
      raise_openssl(Status::kInvalidInput, "cannot load the CA file '" + file + "'");
    }
  }
  check_readable("certificate", config.files.cert_file);
  if (SSL_CTX_use_certificate_chain_file(native, config.files.cert_file.c_str()) != 1) {
    raise_openssl(Status::kInvalidInput,
                  "cannot load the certificate '" + config.files.cert_file + "'");
  }
  if (SSL_CTX_use_PrivateKey(native, config.key->native()) != 1 ||
      SSL_CTX_check_private_key(native) != 1) {
    raise_openssl(Status::kInvalidInput, "the private key does not match the certificate '" +
                                             config.files.cert_file + "'");
  }
  if (!config.files.crl_files.empty()) load_crls(native, config.files.crl_files);

  // Both sides: the peer must present a certificate, and it must verify.
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return context;
}

}  // namespace memloom::store
