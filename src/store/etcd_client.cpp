// The etcd client's operations. Every call runs under a deadline of connect_timeout (at least
// kMinCallTime), or the deadline of the API call it serves when that is earlier
// (call_deadline.h), to find a member that serves it (etcd_http.h). Atomic read-modify-writes (add,
// append, compare-and-swap) are transactions that compare the key's revision (or value) and the
// absence of a receipt key unique to the call, and write the new value and the receipt together:
// a call whose reply was lost and is sent again fails the comparison and finds its receipt, so
// it counts once. Receipts are removed by this client's next write (or when it closes).
#include "src/store/etcd_client.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/interrupt_check.h"
#include "src/base/log.h"
#include "src/store/asio.h"
#include "src/store/call_deadline.h"
#include "src/store/etcd_http.h"
#include "src/store/etcd_json.h"
#include "src/store/etcd_requests.h"
#include "src/store/etcd_watch.h"
#include "src/store/event_dispatcher.h"

namespace memloom::store {
namespace {

namespace asio = boost::asio;
using etcd::JsonObject;
using etcd::JsonValue;
using namespace etcd::requests;
using std::chrono::milliseconds;

constexpr milliseconds kMinCallTime{1000};
constexpr size_t kReceiptsPerWrite = 16;
constexpr milliseconds kCloseTime{2000};
// The last value and revision seen of this many keys: an add or append of a key this client
// wrote before usually needs one transaction, not two.
constexpr size_t kCachedKeys = 1024;
// A transaction that lost a race to another writer waits a random pause before its next attempt:
// up to this many of its own round trips, divided by the races the call has lost, so the call
// waiting longest tends to win the next race and few transactions are wasted. A flat pause (up to
// 4 ms) left adds of 32 clients on one counter losing past their deadline; 16 beat 4 and 8 with 64
// writers and kept rate and mean with 4 (bench/RESULTS.md, "Config store: adds to one counter").
constexpr int kConflictPauseRoundTrips = 16;

std::string random_id() {
  std::random_device device;
  uint64_t bits = (static_cast<uint64_t>(device()) << 32) | device();
  return base::hex_bytes(&bits, sizeof(bits));
}

class EtcdClient : public Client {
 public:
  EtcdClient(const std::string& url, const ClientOptions& options);
  ~EtcdClient() override;
  void open();

  MEMLOOM_STORE_CLIENT_OVERRIDES

 private:
  // The client's time per call, bounded by the deadline of the API call it serves.
  Deadline call_deadline() const { return CallDeadlineScope::bound(Deadline::after(call_time_)); }
  JsonValue call(const std::string& path, const std::string& body, const std::string& what,
                 Deadline deadline);
  JsonValue call(const std::string& path, const std::string& body, const std::string& what) {
    return call(path, body, what, call_deadline());
  }
  int64_t job_lease();
  void acquire_job_lease();
  // Runs a transaction, with `ops` followed by the removal of receipts already answered.
  JsonValue txn(const std::vector<std::string>& compare, std::vector<std::string> success,
                const std::vector<std::string>& failure, const std::string& what);
  std::string new_receipt() { return root_ + "r/" + id_ + "/" + std::to_string(++receipts_); }
  void receipt_done(std::string receipt);
  // One read-modify-write with a receipt: `next(current value or nullopt)` gives the new value
  // and the result stored in the receipt. Returns the result.
  std::string read_modify_write(
      const std::string& key, const std::string& what,
      const std::function<std::pair<std::string, std::string>(const std::optional<std::string>&)>&
          next);
  int64_t current_revision(const std::string& key, const std::string& range_end,
                           const std::string& what);
  void start_watch(WatchId id, const std::string& key, const std::string& range_end,
                   int64_t revision, etcd::WatchStream::OnEvents on_events);
  void keepalive_loop();
  bool keepalive(int64_t lease, Deadline deadline);

  const std::string url_;
  const ClientOptions options_;
  const milliseconds call_time_;
  etcd::EtcdHttp http_;
  const std::string root_;
  const std::string id_ = random_id();
  std::atomic<bool> connected_{false};
  std::atomic<uint64_t> receipts_{0};

  std::mutex lease_mutex_;
  int64_t job_lease_ = 0;                   // guarded by lease_mutex_
  int64_t rank_lease_ = 0;                  // written by open() only
  std::vector<std::string> done_receipts_;  // guarded by lease_mutex_

  struct Seen {
    std::string value;
    int64_t revision = 0;
  };
  std::mutex seen_mutex_;
  std::unordered_map<std::string, Seen> seen_;  // guarded by seen_mutex_
  void remember(const std::string& key, std::optional<std::string> value, int64_t revision);

  std::shared_ptr<EventDispatcher> events_ = EventDispatcher::start();
  std::atomic<WatchId> next_watch_id_{1};
  asio::io_context watch_io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> watch_work_{watch_io_.get_executor()};
  std::unordered_map<WatchId, std::shared_ptr<etcd::WatchStream>> watches_;  // watch_io_ only
  std::thread watch_thread_;

  std::mutex keepalive_mutex_;
  std::condition_variable keepalive_wake_;
  bool closing_ = false;  // guarded by keepalive_mutex_
  std::thread keepalive_thread_;
};

EtcdClient::EtcdClient(const std::string& url, const ClientOptions& options)
    : url_(url),
      options_(options),
      call_time_(std::max(options.connect_timeout, kMinCallTime)),
      http_(parse_etcd_url(url).endpoints, etcd::make_etcd_tls(options.tls)),
      root_(etcd_job_root(options)) {
  options.check();
  watch_thread_ = std::thread([this] { watch_io_.run(); });
}

EtcdClient::~EtcdClient() {
  {
    std::lock_guard<std::mutex> lock(keepalive_mutex_);
    closing_ = true;
  }
  keepalive_wake_.notify_all();
  if (keepalive_thread_.joinable()) keepalive_thread_.join();
  events_->stop();
  asio::post(watch_io_, [this] {
    for (auto& [id, stream] : watches_) stream->cancel();
    watches_.clear();
    watch_work_.reset();
  });
  watch_thread_.join();
  // Revoking the rank's lease is what tells rank-down watchers at once that this rank left.
  try {
    Deadline deadline = Deadline::after(kCloseTime);
    if (rank_lease_ != 0)
      http_.call("/v3/lease/revoke", JsonObject().integer("ID", rank_lease_).finish(), deadline,
                 "revoke the rank lease");
    if (receipts_.load() != 0) {
      std::string receipts = root_ + "r/" + id_ + "/";
      http_.call("/v3/kv/deleterange",
                 JsonObject()
                     .bytes("key", receipts)
                     .bytes("range_end", etcd::prefix_range_end(receipts))
                     .finish(),
                 deadline, "remove receipts");
    }
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "store client: closing on etcd " << url_ << ": " << error.what()
                                                        << " (its leases expire by themselves)");
  }
}

JsonValue EtcdClient::call(const std::string& path, const std::string& body,
                           const std::string& what, Deadline deadline) {
  try {
    JsonValue reply = http_.call(path, body, deadline, what);
    connected_ = true;
    return reply;
  } catch (const Error& error) {
    if (error.status() == Status::kTimeout || error.status() == Status::kCommunication)
      connected_ = false;
    throw;
  }
}

void EtcdClient::acquire_job_lease() {
  std::string key = root_ + "job-lease";
  JsonValue found =
      call("/v3/kv/range", JsonObject().bytes("key", key).finish(), "find the job lease");
  if (const JsonValue* kv = first_kv(found)) {
    if (auto id = parse_counter(kv_value(kv)); id && keepalive(*id, call_deadline())) {
      std::lock_guard<std::mutex> lock(lease_mutex_);
      job_lease_ = *id;
      return;
    }
  }
  JsonValue granted =
      call("/v3/lease/grant", JsonObject().integer("TTL", kEtcdJobLeaseTtl.count()).finish(),
           "grant the job lease");
  int64_t mine = reply_int(granted.find("ID"), "lease id");
  // The first client of the job publishes its lease; the others adopt the published one.
  JsonValue reply =
      call("/v3/kv/txn",
           JsonObject()
               .raw("compare", etcd::json_array({version_is(key, 0)}))
               .raw("success", etcd::json_array({put_op(key, std::to_string(mine), mine)}))
               .raw("failure", etcd::json_array({range_op(key)}))
               .finish(),
           "publish the job lease");
  int64_t lease = mine;
  if (reply.find("succeeded") == nullptr) {
    auto published = parse_counter(kv_value(first_kv(txn_range(reply, 0))));
    if (!published) raise(Status::kCommunication, "etcd holds a bad job lease id at " + key);
    lease = *published;
    call("/v3/lease/revoke", JsonObject().integer("ID", mine).finish(), "revoke a spare lease");
  }
  std::lock_guard<std::mutex> lock(lease_mutex_);
  job_lease_ = lease;
}

int64_t EtcdClient::job_lease() {
  std::lock_guard<std::mutex> lock(lease_mutex_);
  return job_lease_;
}

void EtcdClient::open() {
  acquire_job_lease();
  if (options_.rank >= 0) {
    // etcd counts lease time in whole seconds (and raises a TTL below its minimum to it).
    auto ttl = std::chrono::duration_cast<std::chrono::seconds>(options_.heartbeat_timeout +
                                                                std::chrono::milliseconds(999));
    JsonValue granted = call("/v3/lease/grant", JsonObject().integer("TTL", ttl.count()).finish(),
                             "grant the rank lease");
    rank_lease_ = reply_int(granted.find("ID"), "lease id");
    std::string live = root_ + "live/" +
                       base::hex_bytes(options_.group.data(), options_.group.size()) + "/" +
                       std::to_string(options_.rank) + "/" + id_;
    call("/v3/kv/put", JsonObject().bytes("key", live).integer("lease", rank_lease_).finish(),
         "register rank " + std::to_string(options_.rank));
  }
  keepalive_thread_ = std::thread([this] { keepalive_loop(); });
}

bool EtcdClient::keepalive(int64_t lease, Deadline deadline) {
  JsonValue reply = http_.call("/v3/lease/keepalive", JsonObject().integer("ID", lease).finish(),
                               deadline, "renew a lease");
  const JsonValue* result = reply.find("result");
  return result != nullptr && etcd::json_int(result->find("TTL")).value_or(0) > 0;
}

void EtcdClient::keepalive_loop() {
  auto job_interval = std::chrono::duration_cast<milliseconds>(kEtcdJobLeaseTtl) / 3;
  auto interval =
      rank_lease_ != 0 ? std::min(options_.heartbeat_interval, job_interval) : job_interval;
  auto next_job = std::chrono::steady_clock::now() + job_interval;
  std::unique_lock<std::mutex> lock(keepalive_mutex_);
  while (!keepalive_wake_.wait_for(lock, interval, [&] { return closing_; })) {
    lock.unlock();
    try {
      // A renewal that cannot get through within the heartbeat timeout is late anyway.
      Deadline deadline = Deadline::after(options_.heartbeat_timeout);
      if (rank_lease_ != 0 && !keepalive(rank_lease_, deadline)) {
        MEMLOOM_LOG(kWarn, "store client: etcd let rank " << options_.rank << "'s lease expire");
      }
      if (std::chrono::steady_clock::now() >= next_job) {
        next_job += job_interval;
        if (!keepalive(job_lease(), deadline)) acquire_job_lease();
      }
      connected_ = true;
    } catch (const std::exception& error) {
      if (connected_.exchange(false))
        MEMLOOM_LOG(kWarn, "store client: lost etcd " << url_ << ": " << error.what());
    }
    lock.lock();
  }
}

void EtcdClient::receipt_done(std::string receipt) {
  std::lock_guard<std::mutex> lock(lease_mutex_);
  done_receipts_.push_back(std::move(receipt));
}

JsonValue EtcdClient::txn(const std::vector<std::string>& compare, std::vector<std::string> success,
                          const std::vector<std::string>& failure, const std::string& what) {
  std::vector<std::string> cleared;
  {
    std::lock_guard<std::mutex> lock(lease_mutex_);
    while (!done_receipts_.empty() && cleared.size() < kReceiptsPerWrite) {
      cleared.push_back(std::move(done_receipts_.back()));
      done_receipts_.pop_back();
    }
  }
  for (const auto& receipt : cleared) success.push_back(delete_op(receipt));
  return call("/v3/kv/txn",
              JsonObject()
                  .raw("compare", etcd::json_array(compare))
                  .raw("success", etcd::json_array(success))
                  .raw("failure", etcd::json_array(failure))
                  .finish(),
              what);
}

void EtcdClient::remember(const std::string& key, std::optional<std::string> value,
                          int64_t revision) {
  std::lock_guard<std::mutex> lock(seen_mutex_);
  if (!value) {
    seen_.erase(key);
    return;
  }
  if (seen_.size() >= kCachedKeys) seen_.clear();
  seen_[key] = Seen{std::move(*value), revision};
}

std::string EtcdClient::read_modify_write(
    const std::string& key, const std::string& what,
    const std::function<std::pair<std::string, std::string>(const std::optional<std::string>&)>&
        next) {
  std::string full = root_ + "k/" + key;
  std::string receipt = new_receipt();
  // First guess: what this client saw last, else that the key is missing. A wrong guess costs
  // one round trip, which reads the key.
  std::optional<std::string> current;
  int64_t revision = 0;
  {
    std::lock_guard<std::mutex> lock(seen_mutex_);
    if (auto found = seen_.find(full); found != seen_.end()) {
      current = found->second.value;
      revision = found->second.revision;
    }
  }
  Deadline deadline = call_deadline();
  std::minstd_rand jitter(static_cast<uint32_t>(std::hash<std::string>()(receipt)));
  bool from_cache = current.has_value();
  int races_lost = 0;
  for (int attempt = 0;; ++attempt) {
    std::pair<std::string, std::string> computed;
    try {
      computed = next(current);
    } catch (const Error&) {
      if (!from_cache) throw;  // a refusal must rest on the value read from etcd, not on memory
      current.reset();
      revision = 0;
      computed = next(current);
    }
    from_cache = false;
    auto& [value, result] = computed;
    std::string compare_key = current ? mod_revision_is(full, revision) : version_is(full, 0);
    const auto sent = std::chrono::steady_clock::now();
    JsonValue reply = txn({compare_key, version_is(receipt, 0)},
                          {put_op(full, value, job_lease()), put_op(receipt, result, job_lease())},
                          {range_op(full), range_op(receipt)}, what);
    const auto round_trip = std::chrono::steady_clock::now() - sent;
    if (reply.find("succeeded") != nullptr) {
      receipt_done(receipt);
      // The transaction's revision is the one our put got.
      const JsonValue* header = reply.find("header");
      remember(full, value, reply_int(header ? header->find("revision") : nullptr, "revision"));
      return result;
    }
    if (const JsonValue* done = first_kv(txn_range(reply, 1))) {
      receipt_done(receipt);
      return kv_value(done);  // an earlier copy of this call was applied
    }
    const JsonValue* kv = first_kv(txn_range(reply, 0));
    bool guessed = current.has_value() || attempt > 0;
    current = kv ? std::optional<std::string>(kv_value(kv)) : std::nullopt;
    revision = kv ? reply_int(kv->find("mod_revision"), "revision") : 0;
    remember(full, current, revision);
    if (deadline.expired()) raise(Status::kTimeout, "store " + what + ": too much contention");
    // A first guess of "missing" that was wrong is no collision; later failures are.
    if (guessed) {
      const auto limit = std::chrono::duration_cast<std::chrono::microseconds>(
                             round_trip * kConflictPauseRoundTrips / ++races_lost)
                             .count();
      const auto pause = std::chrono::microseconds(
          jitter() % static_cast<unsigned>(std::clamp<int64_t>(limit, 1, UINT32_MAX)));
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, deadline.remaining()));
    }
  }
}

void EtcdClient::set(const std::string& key, const std::string& value) {
  call("/v3/kv/put", put_body(root_ + "k/" + key, value, job_lease()), "set '" + key + "'");
}

std::optional<std::string> EtcdClient::get(const std::string& key, milliseconds timeout) {
  MEMLOOM_CHECK_ARG(timeout.count() >= 0, "store get: the timeout must not be negative");
  Deadline wait = Deadline::after(timeout);
  std::string full = root_ + "k/" + key;
  JsonValue reply =
      call("/v3/kv/range", JsonObject().bytes("key", full).finish(), "get '" + key + "'");
  if (const JsonValue* kv = first_kv(reply)) return kv_value(kv);
  if (timeout.count() == 0 || wait.expired()) return std::nullopt;
  int64_t revision = reply_int(
      reply.find("header") ? reply.find("header")->find("revision") : nullptr, "revision");
  // Wait on a watch from the revision after the miss: no put between the two can be missed.
  asio::io_context io{1};
  std::optional<std::string> found;
  std::string unreachable;
  auto stream = etcd::WatchStream::start(
      io, http_.endpoints(), http_.tls(), http_.preferred(), full, "", revision + 1,
      [&](const std::vector<etcd::KvEvent>& events) {
        for (const auto& event : events) {
          if (!event.deleted) {
            found = event.value;
            io.stop();
          }
        }
      },
      [&](const std::string& why) {
        // No member takes the watch: the cluster is gone, and waiting on cannot end well.
        unreachable = why;
        io.stop();
      });
  auto stop_watching = [&] {
    stream->cancel();
    io.restart();
    io.poll();
  };
  try {
    // Asking the caller's interrupt check between slices (memloom/interrupt.h).
    base::wait_in_slices(wait.time_point(), [&](auto end) {
      io.run_until(end);
      return io.stopped();
    });
  } catch (const Error&) {
    stop_watching();
    throw;
  }
  stop_watching();
  if (!found && !unreachable.empty()) {
    connected_ = false;
    raise(Status::kCommunication, "store get '" + key + "': while waiting, no etcd member of " +
                                      http_.url() + " took the watch (" + unreachable + ")");
  }
  return found;
}

int64_t EtcdClient::add(const std::string& key, int64_t delta) {
  std::string what = "add '" + key + "'";
  std::string result = read_modify_write(key, what, [&](const std::optional<std::string>& current) {
    int64_t value = 0;
    if (current) {
      auto parsed = parse_counter(*current);
      if (!parsed)
        raise(Status::kInvalidValue, "store " + what + " refused: the value is not an integer");
      value = *parsed;
    }
    int64_t sum = 0;
    if (__builtin_add_overflow(value, delta, &sum))
      raise(Status::kInvalidValue, "store " + what + " refused: the counter would overflow");
    return std::make_pair(std::to_string(sum), std::to_string(sum));
  });
  return *parse_counter(result);
}

size_t EtcdClient::append(const std::string& key, const std::string& value) {
  std::string result = read_modify_write(key, "append '" + key + "'",
                                         [&](const std::optional<std::string>& current) {
                                           std::string grown = current.value_or("") + value;
                                           auto length = std::to_string(grown.size());
                                           return std::make_pair(std::move(grown), length);
                                         });
  return static_cast<size_t>(*parse_counter(result));
}

bool EtcdClient::compare_and_swap(const std::string& key, const std::string& expected,
                                  const std::string& desired, bool expected_missing,
                                  std::string* current) {
  std::string full = root_ + "k/" + key;
  std::string receipt = new_receipt();
  JsonValue reply = txn(
      {expected_missing ? version_is(full, 0) : value_is(full, expected), version_is(receipt, 0)},
      {put_op(full, desired, job_lease()), put_op(receipt, "1", job_lease())},
      {range_op(full), range_op(receipt)}, "compare-and-swap '" + key + "'");
  receipt_done(receipt);
  bool swapped = reply.find("succeeded") != nullptr || first_kv(txn_range(reply, 1)) != nullptr;
  if (current != nullptr) {
    const JsonValue* kv = swapped ? nullptr : first_kv(txn_range(reply, 0));
    *current = swapped ? desired : kv ? kv_value(kv) : "";
  }
  return swapped;
}

bool EtcdClient::remove(const std::string& key) {
  JsonValue reply =
      call("/v3/kv/deleterange", JsonObject().bytes("key", root_ + "k/" + key).finish(),
           "remove '" + key + "'");
  return reply_int(reply.find("deleted"), "count") > 0;
}

size_t EtcdClient::remove_prefix(const std::string& prefix) {
  std::string full = root_ + "k/" + prefix;
  JsonValue reply = call(
      "/v3/kv/deleterange",
      JsonObject().bytes("key", full).bytes("range_end", etcd::prefix_range_end(full)).finish(),
      "remove_prefix '" + prefix + "'");
  return static_cast<size_t>(reply_int(reply.find("deleted"), "count"));
}

int64_t EtcdClient::current_revision(const std::string& key, const std::string& range_end,
                                     const std::string& what) {
  JsonObject range;
  range.bytes("key", key);
  if (!range_end.empty()) range.bytes("range_end", range_end);
  JsonValue reply = call("/v3/kv/range", range.boolean("count_only", true).finish(), what);
  return reply_int(reply.find("header") ? reply.find("header")->find("revision") : nullptr,
                   "revision");
}

void EtcdClient::start_watch(WatchId id, const std::string& key, const std::string& range_end,
                             int64_t revision, etcd::WatchStream::OnEvents on_events) {
  auto stream = etcd::WatchStream::start(
      watch_io_, http_.endpoints(), http_.tls(), http_.preferred(), key, range_end, revision + 1,
      std::move(on_events), [this](const std::string& why) {
        if (connected_.exchange(false))
          MEMLOOM_LOG(kWarn, "store client: no etcd member of " << url_ << " takes a watch (" << why
                                                                << "); retrying");
      });
  asio::post(watch_io_, [this, id, stream] { watches_.emplace(id, stream); });
}

WatchId EtcdClient::watch_key(const std::string& key, WatchCallback callback) {
  MEMLOOM_CHECK_ARG(callback != nullptr, "store watch: the callback is empty");
  std::string full = root_ + "k/" + key;
  int64_t revision = current_revision(full, "", "watch_key '" + key + "'");
  WatchId id = next_watch_id_.fetch_add(1);
  events_->add(id, std::move(callback));
  auto events = events_;
  start_watch(id, full, "", revision, [events, id, key](const auto& changes) {
    for (const etcd::KvEvent& change : changes) {
      WatchEvent event;
      event.kind = change.deleted ? WatchEventKind::kRemoved : WatchEventKind::kChanged;
      event.key = key;
      event.value = change.value;
      events->push(id, std::move(event));
    }
  });
  return id;
}

WatchId EtcdClient::watch_rank_down(const std::string& group, WatchCallback callback) {
  MEMLOOM_CHECK_ARG(callback != nullptr, "store watch: the callback is empty");
  std::string prefix = root_ + "live/" + base::hex_bytes(group.data(), group.size()) + "/";
  std::string end = etcd::prefix_range_end(prefix);
  int64_t revision = current_revision(prefix, end, "watch_rank_down '" + group + "'");
  WatchId id = next_watch_id_.fetch_add(1);
  events_->add(id, std::move(callback));
  auto events = events_;
  start_watch(id, prefix, end, revision, [events, id, group, prefix](const auto& changes) {
    for (const etcd::KvEvent& change : changes) {
      if (!change.deleted) continue;
      std::string rest = change.key.substr(prefix.size());
      auto rank = parse_counter(rest.substr(0, rest.find('/')));
      if (!rank) continue;
      WatchEvent event;
      event.kind = WatchEventKind::kRankDown;
      event.rank = static_cast<int>(*rank);
      event.group = group;
      events->push(id, std::move(event));
    }
  });
  return id;
}

void EtcdClient::unwatch(WatchId id) {
  events_->remove(id);
  asio::post(watch_io_, [this, id] {
    auto found = watches_.find(id);
    if (found == watches_.end()) return;
    found->second->cancel();
    watches_.erase(found);
  });
}

}  // namespace

std::string etcd_job_root(const ClientOptions& options) {
  const char* prefix = std::getenv("MEMLOOM_STORE_PREFIX");
  std::string name = prefix != nullptr && *prefix != '\0'
                         ? std::string(prefix)
                         : options.job_namespace.value_or(default_job_namespace());
  return "memloom/" + (name.empty() ? std::string("shared") : "job/" + name) + "/";
}

std::unique_ptr<Client> connect_etcd(const std::string& url, const ClientOptions& options) {
  auto client = std::make_unique<EtcdClient>(url, options);
  client->open();
  return client;
}

void check_etcd_reachable(const std::string& url, std::chrono::milliseconds timeout,
                          const TlsSetting& tls) {
  etcd::EtcdHttp http(parse_etcd_url(url).endpoints, etcd::make_etcd_tls(tls));
  http.call("/v3/maintenance/status", "{}", Deadline::after(std::max(timeout, kMinCallTime)),
            "reachability check");
}

}  // namespace memloom::store
