// The config store client on an etcd cluster (etcd://HOST:PORT[,HOST:PORT...]): the same Client
// interface and semantics as the TCP store's, through etcd's v3 JSON gateway.
//
// Key layout under the job's root "memloom/<prefix>/" (prefix: MEMLOOM_STORE_PREFIX, else the
// client's job namespace):
//   k/<key>                      the store's keys, all attached to the job lease
//   job-lease                    the job lease's id (itself attached to it)
//   live/<hex group>/<rank>/<id> one per ranked client, attached to that client's own lease
//   r/<client id>/<n>            receipts of add/append/compare-and-swap (see etcd_client.cpp)
#pragma once

#include <memory>
#include <string>

#include "src/store/client.h"

namespace memloom::store {

// The lease that holds a job's keys lives this long after the last client stopped renewing it:
// the keys of an ended or crashed job vanish this long after it.
inline constexpr std::chrono::seconds kEtcdJobLeaseTtl{30};

std::unique_ptr<Client> connect_etcd(const std::string& url, const ClientOptions& options);

// The job's root prefix in etcd for `options` ("memloom/<prefix>/").
std::string etcd_job_root(const ClientOptions& options);

// Asks every member of the cluster at `url` for its status until one answers or `timeout`
// passes, over TLS when `tls` says so (as a client would connect); throws like a store call
// (kTimeout / kCommunication naming the endpoints tried).
void check_etcd_reachable(const std::string& url, std::chrono::milliseconds timeout,
                          const TlsSetting& tls = TlsSetting());

}  // namespace memloom::store
