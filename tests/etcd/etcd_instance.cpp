// The store conformance suites (tests/store) against a real single-member etcd: the same tests
// the TCP store passes.
#include "tests/etcd/etcd_cluster.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

// One etcd per test process (ctest runs each test in its own): tests keep apart by namespace.
EtcdCluster& shared_cluster() {
  static std::unique_ptr<EtcdCluster> cluster = std::make_unique<EtcdCluster>(1);
  return *cluster;
}

class EtcdTestStore : public TestStore {
 public:
  std::string url() override { return shared_cluster().url(); }
};

StoreKind etcd_store_kind() {
  return {"Etcd", [] {
            shared_cluster();
            return std::make_unique<EtcdTestStore>();
          }};
}

}  // namespace

MEMLOOM_INSTANTIATE_STORE_CONFORMANCE(Etcd, etcd_store_kind());

}  // namespace memloom::store::testing
