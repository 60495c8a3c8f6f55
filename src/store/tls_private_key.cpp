#include "src/store/tls_private_key.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <climits>
#include <cstring>

#include "memloom/error.h"
#include "src/store/tls_openssl_error.h"

namespace memloom::store {
namespace {

// OpenSSL's password callback. Always installed: without one, OpenSSL would prompt on the
// terminal for the password of an encrypted key.
int give_password(char* buffer, int size, int /*rwflag*/, void* user_data) {
  const auto* password = static_cast<const std::string*>(user_data);
  if (password->size() > static_cast<size_t>(size)) return -1;
  std::memcpy(buffer, password->data(), password->size());
  return static_cast<int>(password->size());
}

// Keeps a secret out of freed memory whichever way the scope is left.
struct WipeOnExit {
  std::string& secret;
  ~WipeOnExit() { OPENSSL_cleanse(secret.data(), secret.size()); }
};

}  // namespace

std::shared_ptr<const TlsPrivateKey> TlsPrivateKey::load(std::string_view pem,
                                                         std::string_view password,
                                                         const PasswordDecryptor& decrypt) {
  MEMLOOM_CHECK_ARG(!pem.empty(), "the TLS private key is empty");
  MEMLOOM_CHECK_ARG(pem.size() < INT_MAX, "the TLS private key is too large");
  std::string plain = decrypt && !password.empty() ? decrypt(password) : std::string(password);
  WipeOnExit wipe{plain};

  ERR_clear_error();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) raise_openssl(Status::kOutOfMemory, "cannot read the TLS private key");
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, give_password, &plain);
  BIO_free(bio);
  if (key == nullptr) {
    raise_openssl(Status::kInvalidInput,
                  "cannot read the TLS private key (not a PEM private key, or a wrong password)");
  }
  return std::shared_ptr<const TlsPrivateKey>(new TlsPrivateKey(key));
}

TlsPrivateKey::~TlsPrivateKey() {
  EVP_PKEY_free(key_);
}

}  // namespace memloom::store
