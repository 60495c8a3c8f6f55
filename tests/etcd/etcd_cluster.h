// Real etcd servers for tests: `members` etcd processes of one cluster on free loopback ports,
// each in a temporary data directory (in /dev/shm). Each runs in its own process group and dies
// with the test process (PR_SET_PDEATHSIG); the destructor kills them all and removes their
// directories, so nothing is left behind even when a test fails. Needs Debian's etcd-server (`etcd`
// on PATH).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/store/etcd_stream.h"
#include "src/store/tls_config.h"

namespace memloom::store::testing {

// TLS on the members' client URLs (peers stay on plain loopback HTTP): HTTPS only, and only
// clients with a certificate of `ca_file` (etcd's --client-cert-auth).
struct EtcdServerTls {
  std::string ca_file;    // --trusted-ca-file
  std::string cert_file;  // --cert-file: must name 127.0.0.1 (etcd's gateway dials it)
  std::string key_file;   // --key-file (unencrypted)
  std::shared_ptr<const TlsConfig> client;  // what wait_ready() connects with
};

class EtcdCluster {
 public:
  // Starts the members and waits until the cluster has a leader. Throws std::runtime_error
  // (with the members' logs) when it does not come up.
  explicit EtcdCluster(int members = 1, std::optional<EtcdServerTls> tls = std::nullopt);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // "etcd://127.0.0.1:P1,127.0.0.1:P2,..."
  std::string url() const;
  // "etcd://127.0.0.1:Pi", one member only.
  std::string member_url(int member) const;
  int size() const { return static_cast<int>(members_.size()); }
  // A member's process (the leader of its process group), -1 once killed by this object.
  pid_t pid(int member) const { return members_[static_cast<size_t>(member)].pid; }

  // SIGKILLs a member (its data stays), or sends it another signal (SIGSTOP / SIGCONT).
  void kill(int member);
  void signal(int member, int signal_number);
  // Starts a killed member again on its ports and data.
  void restart(int member);
  // Waits until a write through every running member succeeds.
  void wait_ready(std::chrono::milliseconds timeout) const;
  // The last lines of the members' logs, for failure messages.
  std::string logs() const;

 private:
  struct Member {
    std::string name;
    uint16_t client_port = 0;
    uint16_t peer_port = 0;
    pid_t pid = -1;
  };
  void spawn(int member, bool initial);
  void stop_all();

  std::optional<EtcdServerTls> tls_;
  etcd::EtcdTls client_tls_;
  std::string directory_;
  std::string initial_cluster_;
  std::string token_;
  std::vector<Member> members_;
  pid_t owner_ = -1;
};

}  // namespace memloom::store::testing
