// MemFabric's TLS configuration calls: smem_set_conf_store_tls + smem_set_config_store_tls_key
// (process-wide) and smem_bm_config_t.storeTlsConfig (per BM world) make the config store speak
// TLS; bad input returns SMEM_INVALID_PARAM with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "smem/host/smem_bm.h"
#include "src/store/tls_config.h"
#include "tests/smem/smem_test_util.h"
#include "tests/tls/test_pki.h"

namespace memloom::testing {
namespace {

using namespace std::chrono_literals;
using tls_test::TestPki;

std::string reversed(std::string text) {
  std::reverse(text.begin(), text.end());
  return text;
}

// smem_decrypt_handler: the stored password is the real one reversed; "fail" fails.
int reversing_decryptor(const char* cipher, size_t cipher_len, char* plain, size_t& plain_len) {
  if (cipher_len == 4 && std::memcmp(cipher, "fail", 4) == 0) return -3;
  if (plain_len < cipher_len) return -1;
  for (size_t i = 0; i < cipher_len; ++i) plain[i] = cipher[cipher_len - 1 - i];
  plain_len = cipher_len;
  return 0;
}

int32_t set_tls_info(const std::string& info) {
  return smem_set_conf_store_tls(true, info.c_str(), static_cast<uint32_t>(info.size()));
}

int32_t set_key(const std::string& pem, const std::string& password = "",
                smem_decrypt_handler handler = nullptr) {
  return smem_set_config_store_tls_key(pem.c_str(), static_cast<uint32_t>(pem.size()),
                                       password.empty() ? nullptr : password.c_str(),
                                       static_cast<uint32_t>(password.size()), handler);
}

std::string tls_info(const TestPki& pki, const std::string& cert_file) {
  return "tlsCaPath: " + pki.dir() + "; tlsCaFile: ca1.pem; tlsCert: " + cert_file +
         "; tlsCrlPath: " + pki.dir() + "/; tlsCrlFile: ca1-crl.pem";
}

class SmemTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }
  // The setting is process-wide: every test starts and ends without it.
  void SetUp() override { reset(); }
  void TearDown() override {
    smem_uninit();
    reset();
  }
  static void reset() {
    smem_set_conf_store_tls(false, nullptr, 0);
    store::set_process_tls_key(nullptr);
  }
  static std::string url() { return "tcp://127.0.0.1:" + std::to_string(free_tcp_port()); }
  static store::ClientOptions options(store::TlsSetting tls) {
    store::ClientOptions options;
    options.connect_timeout = 3000ms;
    options.tls = std::move(tls);
    return options;
  }
  // The store at `url` answers a TLS client and refuses a plain one.
  static void expect_tls_only(const std::string& url) {
    auto client =
        store::Client::connect(url, options(store::TlsSetting::use(pki_->config(pki_->client()))));
    client->set("k", "v");
    EXPECT_EQ(client->get("k", 0ms), "v");
    EXPECT_THROW(store::Client::connect(url, options(store::TlsSetting::plain())), Error);
    EXPECT_TRUE(client->connected());
  }
  static TestPki* pki_;
};
TestPki* SmemTls::pki_ = nullptr;

TEST_F(SmemTls, ProcessWideTlsAppliesToTheStoreAndItsClients) {
  ASSERT_SMEM_OK(set_tls_info(tls_info(*pki_, pki_->server().cert_file)));
  ASSERT_SMEM_OK(set_key(pki_->server().key_pem));
  std::string store_url = url();
  ASSERT_SMEM_OK(smem_create_config_store(store_url.c_str()));
  expect_tls_only(store_url);
  // A client with default options follows the process-wide setting too.
  auto client = store::Client::connect(store_url, options(store::TlsSetting()));
  EXPECT_EQ(client->get("k", 0ms), "v");
}

TEST_F(SmemTls, DisablingTlsMakesNewStoresPlainAgain) {
  ASSERT_SMEM_OK(set_tls_info(tls_info(*pki_, pki_->server().cert_file)));
  ASSERT_SMEM_OK(set_key(pki_->server().key_pem));
  ASSERT_SMEM_OK(smem_set_conf_store_tls(false, nullptr, 0));
  std::string store_url = url();
  ASSERT_SMEM_OK(smem_create_config_store(store_url.c_str()));
  auto plain = store::Client::connect(store_url, options(store::TlsSetting::plain()));
  EXPECT_TRUE(plain->connected());
}

TEST_F(SmemTls, EncryptedKeyWithPasswordOrDecryptHandler) {
  const std::string& pem = pki_->encrypted_client().key_pem;
  ASSERT_SMEM_OK(set_tls_info(tls_info(*pki_, pki_->encrypted_client().cert_file)));
  EXPECT_SMEM_OK(set_key(pem, TestPki::kPassword));
  EXPECT_SMEM_OK(set_key(pem, reversed(TestPki::kPassword), reversing_decryptor));
  std::string store_url = url();
  ASSERT_SMEM_OK(smem_create_config_store(store_url.c_str()));
  expect_tls_only(store_url);

  EXPECT_SMEM_FAILS(set_key(pem, "wrong"), SMEM_INVALID_PARAM, "wrong password");
  EXPECT_SMEM_FAILS(set_key(pem, TestPki::kPassword, reversing_decryptor), SMEM_INVALID_PARAM,
                    "wrong password");
  EXPECT_SMEM_FAILS(set_key(pem, "fail", reversing_decryptor), SMEM_INVALID_PARAM,
                    "decryptor failed (returned -3)");
}

TEST_F(SmemTls, BadArgumentsAreRefusedWithMessages) {
  EXPECT_SMEM_FAILS(smem_set_conf_store_tls(true, nullptr, 0), SMEM_INVALID_PARAM, "empty");
  EXPECT_SMEM_FAILS(set_tls_info("tlsCaFile: /ca.pem; tlsCert: /c.pem; color: blue"),
                    SMEM_INVALID_PARAM, "unknown key 'color'");
  EXPECT_SMEM_FAILS(set_tls_info("tlsCaFile: /ca.pem"), SMEM_INVALID_PARAM, "tlsCert");
  EXPECT_SMEM_FAILS(set_tls_info("tlsCaFile: /a.pem,,/b.pem ;tlsCert: /c.pem"), SMEM_INVALID_PARAM,
                    "empty item");
  EXPECT_SMEM_FAILS(set_key(""), SMEM_INVALID_PARAM, "empty");
  EXPECT_SMEM_FAILS(set_key("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
                    SMEM_INVALID_PARAM, "cannot read the TLS private key");
  EXPECT_SMEM_FAILS(smem_set_config_store_tls_key("x", 1, nullptr, 3, nullptr), SMEM_INVALID_PARAM,
                    "tls_pk_pw is null");
  // A length that counts the terminator is fine.
  std::string info = tls_info(*pki_, pki_->server().cert_file);
  EXPECT_SMEM_OK(smem_set_conf_store_tls(true, info.c_str(), info.size() + 1));
  // TLS on but no key yet: the store does not start (rather than start without TLS).
  EXPECT_SMEM_FAILS(smem_create_config_store(url().c_str()), SMEM_INVALID_PARAM, "no private key");
}

void copy_path(char (&field)[SMEM_TLS_PATH_SIZE], const std::string& path) {
  ASSERT_LT(path.size(), sizeof(field));
  std::memcpy(field, path.c_str(), path.size() + 1);
}

TEST_F(SmemTls, BmStoreTlsConfigWithADecrypterLibrary) {
  smem_bm_config_t config;
  ASSERT_SMEM_OK(smem_bm_config_init(&config));
  config.startConfigStoreOnly = true;
  config.storeTlsConfig.tlsEnable = true;
  copy_path(config.storeTlsConfig.caPath, pki_->ca_file());
  copy_path(config.storeTlsConfig.crlPath, pki_->crl_file());
  copy_path(config.storeTlsConfig.certPath, pki_->encrypted_client().cert_file);
  copy_path(config.storeTlsConfig.keyPath, pki_->encrypted_client().key_file);
  copy_path(config.storeTlsConfig.keyPassPath,
            pki_->write("password.txt", reversed(TestPki::kPassword) + "\n"));
  copy_path(config.storeTlsConfig.decrypterLibPath, MEMLOOM_TEST_DECRYPTER);
  std::string store_url = url();
  ASSERT_SMEM_OK(smem_bm_init(store_url.c_str(), 1, 0, &config));
  expect_tls_only(store_url);
  smem_bm_uninit(0);

  copy_path(config.storeTlsConfig.keyPassPath, pki_->write("failing.txt", "fail"));
  EXPECT_SMEM_FAILS(smem_bm_init(store_url.c_str(), 1, 0, &config), SMEM_INVALID_PARAM,
                    "decryptor failed (returned 7)");
  copy_path(config.storeTlsConfig.decrypterLibPath, pki_->dir() + "/no-such-library.so");
  EXPECT_SMEM_FAILS(smem_bm_init(store_url.c_str(), 1, 0, &config), SMEM_INVALID_PARAM,
                    "cannot be loaded");
  config.storeTlsConfig.decrypterLibPath[0] = '\0';
  copy_path(config.storeTlsConfig.keyPassPath, pki_->dir() + "/no-such-password");
  EXPECT_SMEM_FAILS(smem_bm_init(store_url.c_str(), 1, 0, &config), SMEM_INVALID_PARAM,
                    "keyPassPath");
  std::memset(config.storeTlsConfig.certPath, 'x', SMEM_TLS_PATH_SIZE);
  EXPECT_SMEM_FAILS(smem_bm_init(store_url.c_str(), 1, 0, &config), SMEM_INVALID_PARAM,
                    "not NUL-terminated");
}

// A whole BM world (one rank) whose rank 0 serves the store: server and client both use TLS.
TEST_F(SmemTls, BmWorldJoinsOverTls) {
  std::string store_url = url();
  const TestPki& pki = *pki_;
  auto results = run_ranks(ranks_on_nodes(1), [&](const RankContext&) {
    smem_bm_config_t config;
    ASSERT_SMEM_OK(smem_bm_config_init(&config));
    config.initTimeout = 30;
    config.storeTlsConfig.tlsEnable = true;
    copy_path(config.storeTlsConfig.caPath, pki.ca_file());
    copy_path(config.storeTlsConfig.certPath, pki.server().cert_file);
    copy_path(config.storeTlsConfig.keyPath, pki.server().key_file);
    ASSERT_SMEM_OK(smem_bm_init(store_url.c_str(), 1, 0, &config));
    EXPECT_EQ(smem_bm_get_rank_id(), 0u);
    expect_tls_only(store_url);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
