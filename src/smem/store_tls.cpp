#include "src/smem/store_tls.h"

#include <dlfcn.h>
#include <openssl/crypto.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "memloom/error.h"

namespace memloom::smem {
namespace {

// The same function type as smem_decrypt_handler, spelled the C way (size_t& and size_t* are
// passed alike), which is how a decrypter library exports it.
using DecryptPasswordFunction = int (*)(const char* cipher_text, size_t cipher_text_len,
                                        char* plain_text, size_t* plain_text_len);

// Large enough for any password; never smaller than the cipher text (ciphers rarely shrink).
constexpr size_t kMinPasswordBuffer = 1024;
// A password (or its cipher text) file larger than this is not one.
constexpr size_t kMaxPasswordFileBytes = 10000;
// The private key PEM of any reasonable algorithm fits easily.
constexpr size_t kMaxKeyFileBytes = 1 << 20;

// Secrets read from files leave no copy in freed memory, whichever way the scope is left.
struct WipeOnExit {
  std::initializer_list<std::string*> secrets;
  ~WipeOnExit() {
    for (std::string* secret : secrets) OPENSSL_cleanse(secret->data(), secret->size());
  }
};

template <typename Call>
std::string decrypt_into_buffer(std::string_view cipher, Call&& call) {
  std::vector<char> plain(std::max(cipher.size(), kMinPasswordBuffer));
  size_t length = plain.size();
  int status = call(cipher.data(), cipher.size(), plain.data(), &length);
  std::string password;
  if (status == 0 && length <= plain.size()) password.assign(plain.data(), length);
  OPENSSL_cleanse(plain.data(), plain.size());
  if (status != 0) {
    raise(Status::kInvalidInput,
          "the private key password decryptor failed (returned " + std::to_string(status) + ")");
  }
  if (length > plain.size()) {
    raise(Status::kInvalidInput, "the private key password decryptor returned " +
                                     std::to_string(length) + " bytes for a buffer of " +
                                     std::to_string(plain.size()));
  }
  return password;
}

std::string field(const char* name, const char (&value)[SMEM_TLS_PATH_SIZE]) {
  MEMLOOM_CHECK_ARG(std::memchr(value, '\0', SMEM_TLS_PATH_SIZE) != nullptr,
                    std::string("storeTlsConfig.") + name + " is not NUL-terminated within " +
                        std::to_string(SMEM_TLS_PATH_SIZE) + " bytes");
  return std::string(value);
}

std::string read_file(const char* name, const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    raise(Status::kInvalidInput, std::string("storeTlsConfig.") + name + " '" + path +
                                     "' cannot be read: " + std::strerror(errno));
  }
  std::ostringstream content;
  content << in.rdbuf();
  std::string text = content.str();
  if (text.size() > max_bytes) {
    raise(Status::kInvalidInput, std::string("storeTlsConfig.") + name + " '" + path +
                                     "' is larger than " + std::to_string(max_bytes) + " bytes");
  }
  return text;
}

// A decrypter library is loaded for the one call and unloaded right after.
std::string decrypt_with_library(const std::string& library, std::string_view cipher) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    raise(Status::kInvalidInput, "storeTlsConfig.decrypterLibPath '" + library +
                                     "' cannot be loaded: " + (why ? why : "unknown error"));
  }
  struct Unload {
    void* handle;
    ~Unload() { dlclose(handle); }
  } unload{handle};
  auto decrypt = reinterpret_cast<DecryptPasswordFunction>(dlsym(handle, "DecryptPassword"));
  if (decrypt == nullptr) {
    raise(Status::kInvalidInput,
          "storeTlsConfig.decrypterLibPath '" + library + "' has no DecryptPassword function");
  }
  return decrypt_into_buffer(cipher, decrypt);
}

}  // namespace

store::PasswordDecryptor password_decryptor(smem_decrypt_handler handler) {
  if (handler == nullptr) return nullptr;
  return [handler](std::string_view cipher) {
    return decrypt_into_buffer(
        cipher, [handler](const char* text, size_t text_len, char* plain, size_t* plain_len) {
          return handler(text, text_len, plain, *plain_len);
        });
  };
}

std::shared_ptr<const store::TlsConfig> tls_config_from(const smem_tls_config& config) {
  std::string ca = field("caPath", config.caPath);
  std::string crl = field("crlPath", config.crlPath);
  std::string cert = field("certPath", config.certPath);
  std::string key_path = field("keyPath", config.keyPath);
  std::string password_path = field("keyPassPath", config.keyPassPath);
  std::string package = field("packagePath", config.packagePath);
  std::string decrypter = field("decrypterLibPath", config.decrypterLibPath);
  MEMLOOM_CHECK_ARG(!ca.empty(), "storeTlsConfig.caPath (the CA file) is required");
  MEMLOOM_CHECK_ARG(!cert.empty(), "storeTlsConfig.certPath (the certificate) is required");
  MEMLOOM_CHECK_ARG(!key_path.empty(), "storeTlsConfig.keyPath (the private key) is required");
  MEMLOOM_CHECK_ARG(decrypter.empty() || !password_path.empty(),
                    "storeTlsConfig.decrypterLibPath is set but keyPassPath (the password to "
                    "decrypt) is not");

  auto tls = std::make_shared<store::TlsConfig>();
  tls->files.ca_files = {ca};
  tls->files.cert_file = cert;
  if (!crl.empty()) tls->files.crl_files = {crl};
  tls->files.package_path = package;

  std::string pem = read_file("keyPath", key_path, kMaxKeyFileBytes);
  std::string password;
  WipeOnExit wipe{{&pem, &password}};
  if (!password_path.empty()) {
    password = read_file("keyPassPath", password_path, kMaxPasswordFileBytes);
    while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
      password.pop_back();
    }
  }
  store::PasswordDecryptor decrypt;
  if (!decrypter.empty()) {
    decrypt = [&decrypter](std::string_view cipher) {
      return decrypt_with_library(decrypter, cipher);
    };
  }
  tls->key = store::TlsPrivateKey::load(pem, password, decrypt);
  return tls;
}

}  // namespace memloom::smem
