// This process's TLS private key (smem_set_config_store_tls_key), parsed once. The password is
// used while parsing and wiped right after; only the loaded key stays in memory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

typedef struct evp_pkey_st EVP_PKEY;  // OpenSSL's type, without including OpenSSL here

namespace memloom::store {

// Turns the password as stored (cipher text) into the real one; throws memloom::Error on failure.
using PasswordDecryptor = std::function<std::string(std::string_view cipher_text)>;

class TlsPrivateKey {
 public:
  // pem: the key as PEM text (encrypted or not). password: its password, passed through
  // `decrypt` first when that is set. Throws memloom::Error(kInvalidInput) if the key cannot be
  // read (not PEM, wrong password) and passes on the decryptor's errors.
  static std::shared_ptr<const TlsPrivateKey> load(std::string_view pem, std::string_view password,
                                                   const PasswordDecryptor& decrypt);
  ~TlsPrivateKey();
  TlsPrivateKey(const TlsPrivateKey&) = delete;
  TlsPrivateKey& operator=(const TlsPrivateKey&) = delete;

  EVP_PKEY* native() const { return key_; }

 private:
  explicit TlsPrivateKey(EVP_PKEY* key) : key_(key) {}
  EVP_PKEY* key_;
};

}  // namespace memloom::store
