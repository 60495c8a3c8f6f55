// The private key: PEM text, encrypted or not, its password given as is or through a decryptor.
// A wrong password or a broken decryptor is an error, never a terminal prompt or a crash.
#include <gtest/gtest.h>

#include <algorithm>

#include "memloom/error.h"
#include "src/store/client.h"
#include "src/store/server.h"
#include "src/store/tls_private_key.h"
#include "tests/tls/test_pki.h"

namespace memloom::store {
namespace {

using namespace std::chrono_literals;
using tls_test::TestPki;

std::string reversed(std::string text) {
  std::reverse(text.begin(), text.end());
  return text;
}

void expect_key_refused(const std::function<void()>& load, const std::string& reason_part) {
  try {
    load();
    ADD_FAILURE() << "the key was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput) << error.what();
    EXPECT_NE(std::string(error.what()).find(reason_part), std::string::npos) << error.what();
  }
}

TEST(TlsKey, EncryptedKeyOpensWithItsPasswordAndServesTls) {
  TestPki pki;
  const std::string& pem = pki.encrypted_client().key_pem;
  ASSERT_NE(pem.find("ENCRYPTED"), std::string::npos);
  auto key = TlsPrivateKey::load(pem, TestPki::kPassword, nullptr);
  ASSERT_NE(key->native(), nullptr);

  ServerOptions server_options;
  server_options.tls = TlsSetting::use(pki.config(pki.server()));
  auto server = Server::start(server_options);
  auto config = std::make_shared<TlsConfig>();
  config->files = pki.config(pki.client())->files;
  config->files.cert_file = pki.encrypted_client().cert_file;
  config->key = key;
  ClientOptions client_options;
  client_options.connect_timeout = 3000ms;
  client_options.tls = TlsSetting::use(config);
  auto client = Client::connect(server->url(), client_options);
  client->set("k", "v");
  EXPECT_EQ(client->get("k", 0ms), "v");
}

TEST(TlsKey, WrongOrMissingPasswordIsRefused) {
  TestPki pki;
  const std::string& pem = pki.encrypted_client().key_pem;
  expect_key_refused([&] { TlsPrivateKey::load(pem, "wrong", nullptr); }, "wrong password");
  expect_key_refused([&] { TlsPrivateKey::load(pem, "", nullptr); }, "wrong password");
}

TEST(TlsKey, DecryptorTurnsTheStoredPasswordIntoTheRealOne) {
  TestPki pki;
  const std::string& pem = pki.encrypted_client().key_pem;
  std::string seen_cipher;
  auto decrypt = [&](std::string_view cipher) {
    seen_cipher = std::string(cipher);
    return reversed(std::string(cipher));
  };
  auto key = TlsPrivateKey::load(pem, reversed(TestPki::kPassword), decrypt);
  EXPECT_NE(key->native(), nullptr);
  EXPECT_EQ(seen_cipher, reversed(TestPki::kPassword));
  // The decryptor's result is the password: the cipher itself does not open the key.
  expect_key_refused([&] { TlsPrivateKey::load(pem, TestPki::kPassword, decrypt); },
                     "wrong password");
}

TEST(TlsKey, DecryptorErrorsPassThrough) {
  TestPki pki;
  auto failing = [](std::string_view) -> std::string {
    raise(Status::kInvalidInput, "the vault is sealed");
  };
  expect_key_refused(
      [&] { TlsPrivateKey::load(pki.encrypted_client().key_pem, "cipher", failing); },
      "the vault is sealed");
}

TEST(TlsKey, NonKeysAreRefused) {
  TestPki pki;
  expect_key_refused([&] { TlsPrivateKey::load("", "", nullptr); }, "empty");
  expect_key_refused([&] { TlsPrivateKey::load("not a key", "", nullptr); }, "not a PEM");
  std::string truncated = pki.client().key_pem.substr(0, 60);
  expect_key_refused([&] { TlsPrivateKey::load(truncated, "", nullptr); }, "not a PEM");
}

}  // namespace
}  // namespace memloom::store
