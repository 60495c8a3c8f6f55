#include "tests/tls/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>

namespace memloom::tls_test {
namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* object) const {
    Free(object);
  }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509_free>>;
using Crl = std::unique_ptr<X509_CRL, Deleter<X509_CRL_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using Time = std::unique_ptr<ASN1_TIME, Deleter<ASN1_TIME_free>>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

Key new_key() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EC key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  check(extension != nullptr, "making an extension");
  check(X509_add_ext(cert, extension, -1) == 1, "adding an extension");
  X509_EXTENSION_free(extension);
}

// issuer == nullptr: self-signed (a CA). `alt_names`: the subjectAltName value, if any.
Cert new_cert(const std::string& common_name, EVP_PKEY* key, long serial, X509* issuer,
              EVP_PKEY* issuer_key, const std::string& alt_names = "") {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("memloom tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  bool is_ca = issuer == nullptr;
  X509* signer = is_ca ? cert.get() : issuer;
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (is_ca) {
    add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth");
    if (!alt_names.empty())
      add_extension(cert.get(), signer, NID_subject_alt_name, alt_names.c_str());
  }
  check(X509_sign(cert.get(), is_ca ? key : issuer_key, EVP_sha256()) > 0, "signing");
  return cert;
}

std::string to_pem(const std::function<int(BIO*)>& write) {
  Bio bio(BIO_new(BIO_s_mem()));
  check(bio != nullptr && write(bio.get()) == 1, "writing PEM");
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string key_pem(EVP_PKEY* key, const std::string& password) {
  return to_pem([&](BIO* bio) {
    if (password.empty()) {
      return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    }
    return PEM_write_bio_PrivateKey(bio, key, EVP_aes_256_cbc(),
                                    reinterpret_cast<const unsigned char*>(password.data()),
                                    static_cast<int>(password.size()), nullptr, nullptr);
  });
}

std::string cert_pem(X509* cert) {
  return to_pem([&](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
}

std::string crl_pem(X509* ca, EVP_PKEY* ca_key, long revoked_serial) {
  Crl crl(X509_CRL_new());
  check(crl != nullptr, "X509_CRL_new");
  X509_CRL_set_version(crl.get(), 1);  // v2
  X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(ca));
  Time last(X509_time_adj_ex(nullptr, 0, -3600, nullptr));
  Time next(X509_time_adj_ex(nullptr, 1, 0, nullptr));
  X509_CRL_set1_lastUpdate(crl.get(), last.get());
  X509_CRL_set1_nextUpdate(crl.get(), next.get());
  X509_REVOKED* revoked = X509_REVOKED_new();
  ASN1_INTEGER* serial = ASN1_INTEGER_new();
  ASN1_INTEGER_set(serial, revoked_serial);
  X509_REVOKED_set_serialNumber(revoked, serial);
  X509_REVOKED_set_revocationDate(revoked, last.get());
  ASN1_INTEGER_free(serial);
  check(X509_CRL_add0_revoked(crl.get(), revoked) == 1, "revoking");
  X509_CRL_sort(crl.get());
  check(X509_CRL_sign(crl.get(), ca_key, EVP_sha256()) > 0, "signing the CRL");
  return to_pem([&](BIO* bio) { return PEM_write_bio_X509_CRL(bio, crl.get()); });
}

}  // namespace

struct TestPki::Authority {
  Key key;
  Cert cert;
};

TestPki::TestPki() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/memloom-tls-test-XXXXXX";
  check(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  dir_ = pattern;
  try {
    Authority ca1{new_key(), nullptr};
    ca1.cert = new_cert("memloom test CA 1", ca1.key.get(), 1, nullptr, nullptr);
    Authority ca2{new_key(), nullptr};
    ca2.cert = new_cert("memloom test CA 2", ca2.key.get(), 1, nullptr, nullptr);
    ca_file_ = write("ca1.pem", cert_pem(ca1.cert.get()));
    other_ca_file_ = write("ca2.pem", cert_pem(ca2.cert.get()));

    // etcd's clients (memloom's too) check the host a server certificate names.
    server_ = issue("server", ca1, 10, "", "IP:127.0.0.1,IP:::1,DNS:localhost");
    client_ = issue("client", ca1, 11);
    revoked_ = issue("revoked", ca1, 12);
    encrypted_client_ = issue("encrypted", ca1, 13, kPassword);
    other_ca_client_ = issue("other-ca-client", ca2, 20);
    crl_file_ = write("ca1-crl.pem", crl_pem(ca1.cert.get(), ca1.key.get(), 12));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

TestPki::~TestPki() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

Identity TestPki::issue(const std::string& name, Authority& ca, long serial,
                        const std::string& password, const std::string& alt_names) {
  Key key = new_key();
  Cert cert =
      new_cert("memloom " + name, key.get(), serial, ca.cert.get(), ca.key.get(), alt_names);
  Identity identity;
  identity.key_pem = key_pem(key.get(), password);
  identity.cert_file = write(name + ".pem", cert_pem(cert.get()));
  identity.key_file = write(name + "-key.pem", identity.key_pem);
  return identity;
}

std::string TestPki::write(const std::string& name, const std::string& text) const {
  std::string path = dir_ + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  check(static_cast<bool>(out), "writing a file");
  return path;
}

std::shared_ptr<const store::TlsConfig> TestPki::config(const Identity& who, bool with_crl,
                                                        bool trust_other_ca) const {
  auto config = std::make_shared<store::TlsConfig>();
  config->files.ca_files = {ca_file_};
  if (trust_other_ca) config->files.ca_files.push_back(other_ca_file_);
  config->files.cert_file = who.cert_file;
  if (with_crl) config->files.crl_files = {crl_file_};
  std::string password = who.key_pem.find("ENCRYPTED") != std::string::npos ? kPassword : "";
  config->key = store::TlsPrivateKey::load(who.key_pem, password, nullptr);
  return config;
}

}  // namespace memloom::tls_test
