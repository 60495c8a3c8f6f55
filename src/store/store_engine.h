// The server's state and semantics, apart from sockets and framing: the key/value table, gets
// parked until their key appears, key watches and rank-down watches. Single-threaded: the server
// calls it only from its I/O thread. Requests that break a limit throw memloom::Error, which the
// server turns into a kError reply (the connection stays up).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/store/protocol.h"

namespace memloom::store {

// Keys are scoped to a job namespace by the server: the engine's key is "<namespace>\0<key>"
// (namespaces never contain '\0', so one namespace's keys are never a prefix of another's, and a
// client's own key may contain anything). Limits apply to the client's part (see visible_key()),
// and events carry it only: clients never see or name the namespace part.
std::string scoped_key(const std::string& job_namespace, const std::string& key);
std::string visible_key(const std::string& scoped);

// What one engine allows besides the wire limits.
struct EngineLimits {
  protocol::Limits wire;
  size_t max_waiters_per_peer = 0;  // parked gets plus watches per peer (0: no cap)
  uint64_t max_total_bytes = 0;     // keys plus values of every namespace (0: no cap)
};

// One connected client, as the engine sees it: something frames can be sent to.
class Peer {
 public:
  virtual ~Peer() = default;
  virtual uint64_t peer_id() const = 0;
  virtual void send(std::string frame) = 0;
};

struct CompareAndSwapResult {
  bool swapped = false;
  bool current_exists = false;
  std::string current;
};

class StoreEngine {
 public:
  StoreEngine(boost::asio::any_io_executor executor, EngineLimits limits);
  ~StoreEngine();
  StoreEngine(const StoreEngine&) = delete;
  StoreEngine& operator=(const StoreEngine&) = delete;

  void set(const std::string& key, std::string value);
  // Replies to (peer, request_id) now if the key exists or timeout is 0, else parks the request
  // until a write creates the key or the timeout passes (then replies "not found").
  void get(const std::shared_ptr<Peer>& peer, uint64_t request_id, const std::string& key,
           std::chrono::milliseconds timeout);
  int64_t add(const std::string& key, int64_t delta);
  CompareAndSwapResult compare_and_swap(const std::string& key, const std::string& expected,
                                        std::string desired, bool expected_missing);
  size_t append(const std::string& key, const std::string& value);
  bool remove(const std::string& key);
  size_t remove_prefix(const std::string& prefix);

  void watch_key(const std::shared_ptr<Peer>& peer, uint64_t watch_id, const std::string& key);
  void watch_rank_down(const std::shared_ptr<Peer>& peer, uint64_t watch_id,
                       const std::string& group);
  void unwatch(const Peer& peer, uint64_t watch_id);

  // Tells every rank-down watcher of `group` that `rank` is gone.
  void announce_rank_down(int64_t rank, const std::string& group);
  // Drops everything the peer registered (its parked gets and watches) once it disconnected, in
  // time linear in what it registered, whatever others registered on the same keys.
  void forget(const Peer& peer);
  // Drops all peers and parked gets (server shutdown).
  void clear();

  size_t key_count() const { return table_.size(); }
  uint64_t total_bytes() const { return total_bytes_; }
  size_t parked_count() const { return parked_.size(); }

  static std::string get_reply(uint64_t request_id, const std::string* value);

 private:
  struct ParkedGet {
    std::shared_ptr<Peer> peer;
    uint64_t request_id = 0;
    std::string key;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };
  struct Watch {
    std::shared_ptr<Peer> peer;
    uint64_t watch_id = 0;
  };
  enum class WatchTarget { kKey, kGroup };
  struct WatchIndexEntry {
    WatchTarget target;
    std::string name;
  };
  using WatchIndexKey = std::pair<uint64_t, uint64_t>;  // (peer id, watch id)
  // What one peer holds, so that its disconnect visits only its own waiters.
  struct PeerWaiters {
    std::set<uint64_t> parked;  // parked get ids
    size_t watches = 0;
  };

  void check_key(const std::string& key) const;
  void check_value_size(size_t bytes, const std::string& key) const;
  // Stores `value` under `key` (creating it) within max_total_bytes; throws kOutOfMemory if the
  // store would grow past it. Returns the stored value.
  const std::string& put(const std::string& key, std::string value);
  void check_room(const std::string& key, uint64_t old_bytes, uint64_t new_bytes) const;
  void erase(std::map<std::string, std::string>::iterator entry);
  // Called after every write: answers parked gets and notifies key watchers.
  void on_changed(const std::string& key, const std::string& value);
  void on_removed(const std::string& key);
  void expire(uint64_t parked_id);
  void register_watch(const std::shared_ptr<Peer>& peer, uint64_t watch_id, WatchTarget target,
                      const std::string& name);
  // Throws kInvalidValue when the peer already holds max_waiters_per_peer_ waiters.
  void check_waiter_room(const Peer& peer);
  // Removes a parked get from every index (its timer is cancelled by its destruction).
  void unpark(uint64_t parked_id);

  boost::asio::any_io_executor executor_;
  protocol::Limits limits_;
  std::map<std::string, std::string> table_;  // ordered, for remove_prefix
  uint64_t next_parked_id_ = 1;
  size_t max_waiters_per_peer_;
  uint64_t max_total_bytes_;
  uint64_t total_bytes_ = 0;  // sum of key and value sizes in table_
  std::unordered_map<uint64_t, ParkedGet> parked_;
  // Ordered sets and maps: removing one waiter is O(log n) however many share its key (a vector
  // or multimap scan made a disconnect quadratic in the waiters of one key).
  std::unordered_map<std::string, std::set<uint64_t>> parked_by_key_;  // ids in arrival order
  std::unordered_map<std::string, std::map<WatchIndexKey, Watch>> key_watches_;
  std::unordered_map<std::string, std::map<WatchIndexKey, Watch>> group_watches_;
  std::map<WatchIndexKey, WatchIndexEntry> watch_index_;
  std::unordered_map<uint64_t, PeerWaiters> waiters_by_peer_;
};

}  // namespace memloom::store
