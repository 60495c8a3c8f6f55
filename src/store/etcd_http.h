// Unary calls to etcd's v3 JSON gateway (POST /v3/kv/range and friends) over HTTP/1.1 keep-alive
// connections, with failover between the cluster's members. Thread-safe: each call takes an idle
// connection from a pool (or opens one), so concurrent calls do not queue behind each other.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "src/store/etcd_json.h"
#include "src/store/etcd_stream.h"
#include "src/store/url.h"

namespace memloom::store::etcd {

class HttpConnection;

class EtcdHttp {
 public:
  // `tls`: HTTPS with this client context (make_etcd_tls); nullptr: plain HTTP.
  explicit EtcdHttp(std::vector<EtcdEndpoint> endpoints, EtcdTls tls = nullptr);
  ~EtcdHttp();
  EtcdHttp(const EtcdHttp&) = delete;
  EtcdHttp& operator=(const EtcdHttp&) = delete;

  // POSTs `body` to `path` and returns etcd's JSON reply. A member that cannot be reached, does
  // not answer, or answers that it cannot serve (no leader, request timed out) is left for the
  // next one, round the cluster, until `deadline`; then kTimeout (some member was reached) or
  // kCommunication (none was) naming every endpoint tried and why. A refusal of the request
  // itself throws at once: kInvalidInput for a bad or over-size request, kOutOfMemory when etcd's
  // space is exhausted, kNotFound for a missing lease, kCommunication otherwise. `what` names the
  // operation in messages.
  JsonValue call(const std::string& path, const std::string& body, Deadline deadline,
                 const std::string& what);

  const std::vector<EtcdEndpoint>& endpoints() const { return endpoints_; }
  const EtcdTls& tls() const { return tls_; }
  // "etcd://a:1,b:2", for messages.
  std::string url() const;
  // The member the next new connection tries first (the last one that answered).
  size_t preferred() const { return preferred_.load(); }
  void prefer_next_after(size_t failed);

 private:
  std::unique_ptr<HttpConnection> acquire();
  void release(std::unique_ptr<HttpConnection> connection);

  const std::vector<EtcdEndpoint> endpoints_;
  const EtcdTls tls_;
  std::atomic<size_t> preferred_{0};
  std::mutex mutex_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;
};

}  // namespace memloom::store::etcd
