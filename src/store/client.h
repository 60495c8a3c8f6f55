// Config store client: the rendezvous every memloom object uses. Thread-safe; one TCP (or TLS)
// connection per client; blocking calls take a timeout and throw memloom::Error(kTimeout) when it
// passes, kCommunication when the server is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "src/store/tls_config.h"

namespace memloom::store {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{30000};
  // The client sends a heartbeat this often; the server declares it down after heartbeat_timeout
  // without one (or at once when the connection closes) and notifies rank-down watchers.
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds heartbeat_timeout{3000};
  // Identity reported in rank-down events (-1: anonymous) and the group it belongs to.
  int rank = -1;
  std::string group;
  // TLS (default: the process-wide setting). The handshake is bounded by connect_timeout.
  TlsSetting tls;
  // The job namespace every key of this client lives in on the server (clients of other
  // namespaces cannot see or touch them). Unset: default_job_namespace().
  std::optional<std::string> job_namespace;
  // The job's secret, which proves to the server that this client belongs to the job: the first
  // connection of a namespace binds it to a key derived from the secret, and later connections
  // must present the same key. Unset: MEMLOOM_JOB_SECRET; empty: no key (the namespace is only
  // named, so any local user who knows its name may join it).
  std::optional<std::string> job_secret;

  // Throws kInvalidInput for timings no client can work with (every backend checks them first).
  void check() const;
};

// The job this process belongs to, from the environment: MEMLOOM_JOB_ID if set, else the job id
// of a common launcher (Slurm job and step, PMIx namespace, Open MPI job, torchrun run id), else
// "" (a namespace shared by every client that names no job).
std::string default_job_namespace();
// MEMLOOM_JOB_SECRET, or "" (memloom-run sets a new one per job; other launchers may set one).
std::string default_job_secret();

enum class WatchEventKind { kChanged, kRemoved, kRankDown };

struct WatchEvent {
  WatchEventKind kind;
  std::string key;    // the watched key (kChanged/kRemoved)
  std::string value;  // the new value (kChanged)
  int rank = -1;      // the rank that went down (kRankDown)
  std::string group;  // its group (kRankDown)
};

using WatchCallback = std::function<void(const WatchEvent&)>;
using WatchId = uint64_t;

class Client {
 public:
  // url: "tcp://IP:PORT" or "tcp://[IPv6]:PORT" (memloom's store; retries until
  // connect_timeout), or "etcd://HOST:PORT[,HOST:PORT...]" (an etcd cluster, etcd_client.h: each
  // call then has connect_timeout to find a member that serves it).
  static std::unique_ptr<Client> connect(const std::string& url, const ClientOptions& options = {});
  virtual ~Client() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits up to `timeout` for the key to exist; timeout 0 means "look once". Returns nullopt
  // if the key does not exist when the timeout passes (no exception for a plain miss).
  virtual std::optional<std::string> get(const std::string& key,
                                         std::chrono::milliseconds timeout) = 0;
  // Atomic counter (the value is a decimal integer; a missing key counts as 0). Returns the new
  // value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Sets key to `desired` if its value equals `expected` (an empty expected with
  // expected_missing=true matches a missing key). Returns true on success; the current value is
  // written to *current when given.
  virtual bool compare_and_swap(const std::string& key, const std::string& expected,
                                const std::string& desired, bool expected_missing,
                                std::string* current) = 0;
  // Appends to the value (creating it); returns the new length.
  virtual size_t append(const std::string& key, const std::string& value) = 0;
  // Returns true if the key existed.
  virtual bool remove(const std::string& key) = 0;
  // Removes every key that starts with prefix; returns how many.
  virtual size_t remove_prefix(const std::string& prefix) = 0;

  // Callbacks run on the client's event thread; they must not block on this client.
  virtual WatchId watch_key(const std::string& key, WatchCallback callback) = 0;
  // Notified when any client that registered with options.group == group goes down.
  virtual WatchId watch_rank_down(const std::string& group, WatchCallback callback) = 0;
  virtual void unwatch(WatchId id) = 0;

  // True while the connection to the server is up.
  virtual bool connected() const = 0;
};

// The overrides of every Client above, for the class body of a backend (the TCP client,
// etcd_client.cpp): one list, so that an operation added to Client is declared in each backend by
// this line and the backends cannot drift apart in signature. `connected()` reads the backend's
// `std::atomic<bool> connected_`.
#define MEMLOOM_STORE_CLIENT_OVERRIDES                                                           \
  void set(const std::string& key, const std::string& value) override;                           \
  std::optional<std::string> get(const std::string& key, std::chrono::milliseconds timeout)      \
      override;                                                                                  \
  int64_t add(const std::string& key, int64_t delta) override;                                   \
  bool compare_and_swap(const std::string& key, const std::string& expected,                     \
                        const std::string& desired, bool expected_missing, std::string* current) \
      override;                                                                                  \
  size_t append(const std::string& key, const std::string& value) override;                      \
  bool remove(const std::string& key) override;                                                  \
  size_t remove_prefix(const std::string& prefix) override;                                      \
  WatchId watch_key(const std::string& key, WatchCallback callback) override;                    \
  WatchId watch_rank_down(const std::string& group, WatchCallback callback) override;            \
  void unwatch(WatchId id) override;                                                             \
  bool connected() const override {                                                              \
    return connected_.load();                                                                    \
  }

// Namespaces keys: PrefixedKey("wm/comm42/")("rank/3") == "wm/comm42/rank/3".
class KeyPrefix {
 public:
  explicit KeyPrefix(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string operator()(const std::string& key) const { return prefix_ + key; }
  const std::string& prefix() const { return prefix_; }
  KeyPrefix sub(const std::string& name) const { return KeyPrefix(prefix_ + name + "/"); }

 private:
  std::string prefix_;
};

}  // namespace memloom::store
