// The store conformance suites (tests/store) against a real single-member etcd, over plain HTTP
// and over HTTPS with client certificates: the same tests the TCP store passes.
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_pki.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

// One etcd per test process (ctest runs each test in its own): tests keep apart by namespace.
EtcdCluster& shared_cluster() {
  static std::unique_ptr<EtcdCluster> cluster = std::make_unique<EtcdCluster>(1);
  return *cluster;
}

struct TlsEtcd {
  tls_test::TestPki pki;
  EtcdCluster cluster{1, etcd_server_tls(pki)};
};

TlsEtcd& shared_tls_cluster() {
  static std::unique_ptr<TlsEtcd> etcd = std::make_unique<TlsEtcd>();
  return *etcd;
}

class EtcdTestStore : public TestStore {
 public:
  std::string url() override { return shared_cluster().url(); }
};

class EtcdTlsTestStore : public TestStore {
 public:
  std::string url() override { return shared_tls_cluster().cluster.url(); }
  void configure(ClientOptions& options) override {
    const auto& pki = shared_tls_cluster().pki;
    options.tls = TlsSetting::use(pki.config(pki.client()));
  }
};

StoreKind etcd_store_kind() {
  return {"Etcd", [] {
            shared_cluster();
            return std::make_unique<EtcdTestStore>();
          }};
}

StoreKind etcd_tls_store_kind() {
  return {"EtcdTls", [] {
            shared_tls_cluster();
            return std::make_unique<EtcdTlsTestStore>();
          }};
}

}  // namespace

MEMLOOM_INSTANTIATE_STORE_CONFORMANCE(Etcd, etcd_store_kind());
MEMLOOM_INSTANTIATE_STORE_CONFORMANCE(EtcdTls, etcd_tls_store_kind());

}  // namespace memloom::store::testing
