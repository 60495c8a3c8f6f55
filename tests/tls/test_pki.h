// A throw-away public key infrastructure for the TLS tests, made with OpenSSL's C API at test
// time (no openssl program needed): two CAs, certificates they issue, a CRL, in a temporary
// directory that the destructor removes.
#pragma once

#include <memory>
#include <string>

#include "src/store/tls_config.h"

namespace memloom::tls_test {

struct Identity {
  std::string cert_file;  // the certificate (PEM)
  std::string key_file;   // its private key (PEM, encrypted when issued with a password)
  std::string key_pem;    // the same key as text
};

class TestPki {
 public:
  // Creates the directory and every file below (a few milliseconds: EC P-256 keys).
  TestPki();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& dir() const { return dir_; }
  // CA 1 issues server (for 127.0.0.1, ::1 and localhost), client, revoked (listed in crl_file) and
  // encrypted_client (key encrypted with kPassword); CA 2 issues other_ca_client.
  const std::string& ca_file() const { return ca_file_; }
  const std::string& other_ca_file() const { return other_ca_file_; }
  const std::string& crl_file() const { return crl_file_; }
  const Identity& server() const { return server_; }
  const Identity& client() const { return client_; }
  const Identity& revoked() const { return revoked_; }
  const Identity& other_ca_client() const { return other_ca_client_; }
  const Identity& encrypted_client() const { return encrypted_client_; }
  static constexpr const char* kPassword = "correct horse battery staple";

  // Writes `text` to dir()/name and returns the path.
  std::string write(const std::string& name, const std::string& text) const;

  // A store TLS configuration: `who` presents its certificate and trusts CA 1 (and CA 2 when
  // trust_other_ca); the CRL is loaded when with_crl.
  std::shared_ptr<const store::TlsConfig> config(const Identity& who, bool with_crl = false,
                                                 bool trust_other_ca = false) const;

 private:
  struct Authority;
  Identity issue(const std::string& name, Authority& ca, long serial,
                 const std::string& password = "", const std::string& alt_names = "");

  std::string dir_;
  std::string ca_file_, other_ca_file_, crl_file_;
  Identity server_, client_, revoked_, other_ca_client_, encrypted_client_;
};

}  // namespace memloom::tls_test
