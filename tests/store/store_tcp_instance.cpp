// The conformance suites against memloom's own TCP store (tests/etcd runs them against etcd).
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {

MEMLOOM_INSTANTIATE_STORE_CONFORMANCE(Tcp, tcp_store_kind());

}  // namespace memloom::store::testing
