// An etcd cluster's TLS from the TLS tests' throw-away PKI (tests/tls/test_pki.h): the members
// present the server certificate (it names 127.0.0.1 and localhost) and admit CA 1's clients.
#pragma once

#include "tests/etcd/etcd_cluster.h"
#include "tests/tls/test_pki.h"

namespace memloom::store::testing {

inline EtcdServerTls etcd_server_tls(const tls_test::TestPki& pki) {
  return EtcdServerTls{pki.ca_file(), pki.server().cert_file, pki.server().key_file,
                       pki.config(pki.client())};
}

}  // namespace memloom::store::testing
