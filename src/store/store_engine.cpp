#include "src/store/store_engine.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "memloom/error.h"
#include "src/store/client.h"

namespace memloom::store {
namespace {

using protocol::FrameWriter;
using protocol::MessageType;

std::string event_frame(uint64_t watch_id, WatchEventKind kind, const std::string& key,
                        const std::string& value, int64_t rank, const std::string& group) {
  return FrameWriter(MessageType::kEvent, 0)
      .u64(watch_id)
      .u8(static_cast<uint8_t>(kind))
      .str(key)
      .str(value)
      .i64(rank)
      .str(group)
      .finish();
}

int64_t parse_counter(const std::string& key, const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    raise(Status::kInvalidValue, "store add: the value of '" + key +
                                     "' is not a decimal integer: '" + text.substr(0, 64) +
                                     (text.size() > 64 ? "...'" : "'"));
  }
  return value;
}

}  // namespace

std::string scoped_key(const std::string& job_namespace, const std::string& key) {
  std::string scoped;
  scoped.reserve(job_namespace.size() + 1 + key.size());
  scoped.append(job_namespace).push_back('\0');
  scoped.append(key);
  return scoped;
}

std::string visible_key(const std::string& scoped) {
  size_t separator = scoped.find('\0');
  return separator == std::string::npos ? scoped : scoped.substr(separator + 1);
}

StoreEngine::StoreEngine(boost::asio::any_io_executor executor, EngineLimits limits)
    : executor_(std::move(executor)),
      limits_(limits.wire),
      max_waiters_per_peer_(limits.max_waiters_per_peer),
      max_total_bytes_(limits.max_total_bytes) {}

StoreEngine::~StoreEngine() {
  clear();
}

void StoreEngine::check_key(const std::string& key) const {
  size_t separator = key.find('\0');  // the limit is on the client's part of the scoped key
  size_t bytes = separator == std::string::npos ? key.size() : key.size() - separator - 1;
  if (bytes > limits_.max_key_bytes) {
    raise(Status::kInvalidInput, "store key of " + std::to_string(bytes) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(limits_.max_key_bytes));
  }
}

void StoreEngine::check_value_size(size_t bytes, const std::string& key) const {
  if (bytes > limits_.max_value_bytes) {
    raise(Status::kInvalidInput, "store value of " + std::to_string(bytes) + " bytes for '" +
                                     visible_key(key) + "' exceeds the limit of " +
                                     std::to_string(limits_.max_value_bytes));
  }
}

void StoreEngine::check_waiter_room(const Peer& peer) {
  if (max_waiters_per_peer_ == 0) return;
  auto found = waiters_by_peer_.find(peer.peer_id());
  if (found == waiters_by_peer_.end()) return;
  size_t held = found->second.parked.size() + found->second.watches;
  if (held >= max_waiters_per_peer_) {
    raise(Status::kInvalidValue, "store: this connection already holds " + std::to_string(held) +
                                     " waiting gets and watches (max_waiters_per_connection " +
                                     std::to_string(max_waiters_per_peer_) +
                                     "); wait for some or unwatch first");
  }
}

void StoreEngine::check_room(const std::string& key, uint64_t old_bytes, uint64_t new_bytes) const {
  uint64_t after = total_bytes_ - old_bytes + new_bytes;
  if (max_total_bytes_ != 0 && new_bytes > old_bytes && after > max_total_bytes_) {
    raise(Status::kOutOfMemory,
          "store is full: " + std::to_string(new_bytes - old_bytes) + " more bytes for '" +
              visible_key(key) + "' would bring it to " + std::to_string(after) +
              " bytes, over its max_total_bytes of " + std::to_string(max_total_bytes_) +
              " (remove keys, or give memloom-store a larger --max-total-bytes)");
  }
}

const std::string& StoreEngine::put(const std::string& key, std::string value) {
  auto found = table_.find(key);
  uint64_t old_bytes = found == table_.end() ? 0 : key.size() + found->second.size();
  uint64_t new_bytes = key.size() + value.size();
  check_room(key, old_bytes, new_bytes);
  total_bytes_ = total_bytes_ - old_bytes + new_bytes;
  if (found == table_.end()) return table_.emplace(key, std::move(value)).first->second;
  found->second = std::move(value);
  return found->second;
}

void StoreEngine::erase(std::map<std::string, std::string>::iterator entry) {
  total_bytes_ -= entry->first.size() + entry->second.size();
  table_.erase(entry);
}

std::string StoreEngine::get_reply(uint64_t request_id, const std::string* value) {
  return FrameWriter(protocol::reply_type(MessageType::kGet), request_id)
      .u8(value != nullptr)
      .str(value != nullptr ? *value : std::string())
      .finish();
}

void StoreEngine::set(const std::string& key, std::string value) {
  check_key(key);
  check_value_size(value.size(), key);
  on_changed(key, put(key, std::move(value)));
}

void StoreEngine::get(const std::shared_ptr<Peer>& peer, uint64_t request_id,
                      const std::string& key, std::chrono::milliseconds timeout) {
  check_key(key);
  auto found = table_.find(key);
  if (found != table_.end()) return peer->send(get_reply(request_id, &found->second));
  if (timeout.count() <= 0) return peer->send(get_reply(request_id, nullptr));
  check_waiter_room(*peer);

  uint64_t id = next_parked_id_++;
  ParkedGet parked{peer, request_id, key, std::make_unique<boost::asio::steady_timer>(executor_)};
  parked.timer->expires_after(timeout);
  parked.timer->async_wait([this, id](const boost::system::error_code& error) {
    if (!error) expire(id);
  });
  parked_.emplace(id, std::move(parked));
  parked_by_key_[key].insert(id);
  waiters_by_peer_[peer->peer_id()].parked.insert(id);
}

void StoreEngine::unpark(uint64_t parked_id) {
  auto found = parked_.find(parked_id);
  if (found == parked_.end()) return;
  auto by_key = parked_by_key_.find(found->second.key);
  if (by_key != parked_by_key_.end()) {
    by_key->second.erase(parked_id);
    if (by_key->second.empty()) parked_by_key_.erase(by_key);
  }
  auto by_peer = waiters_by_peer_.find(found->second.peer->peer_id());
  if (by_peer != waiters_by_peer_.end()) {
    by_peer->second.parked.erase(parked_id);
    if (by_peer->second.parked.empty() && by_peer->second.watches == 0) {
      waiters_by_peer_.erase(by_peer);
    }
  }
  parked_.erase(found);  // destroying the timer cancels it
}

void StoreEngine::expire(uint64_t parked_id) {
  auto found = parked_.find(parked_id);
  if (found == parked_.end()) return;  // answered by a write in the meantime
  std::shared_ptr<Peer> peer = found->second.peer;
  uint64_t request_id = found->second.request_id;
  unpark(parked_id);
  peer->send(get_reply(request_id, nullptr));
}

int64_t StoreEngine::add(const std::string& key, int64_t delta) {
  check_key(key);
  auto found = table_.find(key);
  int64_t current = found == table_.end() ? 0 : parse_counter(key, found->second);
  int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result)) {
    raise(Status::kInvalidValue, "store add: '" + key + "' would overflow int64 (" +
                                     std::to_string(current) + " + " + std::to_string(delta) + ")");
  }
  on_changed(key, put(key, std::to_string(result)));
  return result;
}

CompareAndSwapResult StoreEngine::compare_and_swap(const std::string& key,
                                                   const std::string& expected, std::string desired,
                                                   bool expected_missing) {
  check_key(key);
  check_value_size(desired.size(), key);
  CompareAndSwapResult result;
  auto found = table_.find(key);
  bool matches =
      expected_missing ? found == table_.end() : found != table_.end() && found->second == expected;
  if (!matches) {
    result.current_exists = found != table_.end();
    if (result.current_exists) result.current = found->second;
    return result;
  }
  const std::string& stored = put(key, std::move(desired));
  result.swapped = true;
  result.current_exists = true;
  result.current = stored;
  on_changed(key, stored);
  return result;
}

size_t StoreEngine::append(const std::string& key, const std::string& value) {
  check_key(key);
  auto found = table_.find(key);
  size_t old_size = found == table_.end() ? 0 : found->second.size();
  check_value_size(old_size + value.size(), key);
  if (found == table_.end()) {
    on_changed(key, put(key, value));
    return value.size();
  }
  uint64_t old_bytes = key.size() + old_size;
  check_room(key, old_bytes, old_bytes + value.size());
  total_bytes_ += value.size();
  found->second.append(value);
  on_changed(key, found->second);
  return found->second.size();
}

bool StoreEngine::remove(const std::string& key) {
  check_key(key);
  auto found = table_.find(key);
  if (found == table_.end()) return false;
  erase(found);
  on_removed(key);
  return true;
}

size_t StoreEngine::remove_prefix(const std::string& prefix) {
  check_key(prefix);
  std::vector<std::string> removed;
  auto it = table_.lower_bound(prefix);
  while (it != table_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    removed.push_back(it->first);
    erase(it++);
  }
  for (const auto& key : removed) on_removed(key);
  return removed.size();
}

void StoreEngine::on_changed(const std::string& key, const std::string& value) {
  auto waiting = parked_by_key_.find(key);
  if (waiting != parked_by_key_.end()) {
    std::set<uint64_t> ids = std::move(waiting->second);
    parked_by_key_.erase(waiting);
    for (uint64_t id : ids) {
      auto parked = parked_.find(id);
      if (parked == parked_.end()) continue;
      parked->second.peer->send(get_reply(parked->second.request_id, &value));
      unpark(id);
    }
  }

  auto watches = key_watches_.find(key);
  if (watches == key_watches_.end()) return;
  for (const auto& [index, watch] : watches->second) {
    watch.peer->send(
        event_frame(watch.watch_id, WatchEventKind::kChanged, visible_key(key), value, -1, ""));
  }
}

void StoreEngine::on_removed(const std::string& key) {
  auto watches = key_watches_.find(key);
  if (watches == key_watches_.end()) return;
  for (const auto& [index, watch] : watches->second) {
    watch.peer->send(
        event_frame(watch.watch_id, WatchEventKind::kRemoved, visible_key(key), "", -1, ""));
  }
}

void StoreEngine::register_watch(const std::shared_ptr<Peer>& peer, uint64_t watch_id,
                                 WatchTarget target, const std::string& name) {
  check_key(name);
  WatchIndexKey index_key{peer->peer_id(), watch_id};
  if (watch_index_.count(index_key) != 0) {
    raise(Status::kInvalidInput, "store watch id " + std::to_string(watch_id) + " is in use");
  }
  check_waiter_room(*peer);
  auto& watches = target == WatchTarget::kKey ? key_watches_ : group_watches_;
  watches[name].emplace(index_key, Watch{peer, watch_id});
  watch_index_.emplace(index_key, WatchIndexEntry{target, name});
  ++waiters_by_peer_[peer->peer_id()].watches;
}

void StoreEngine::watch_key(const std::shared_ptr<Peer>& peer, uint64_t watch_id,
                            const std::string& key) {
  register_watch(peer, watch_id, WatchTarget::kKey, key);
}

void StoreEngine::watch_rank_down(const std::shared_ptr<Peer>& peer, uint64_t watch_id,
                                  const std::string& group) {
  register_watch(peer, watch_id, WatchTarget::kGroup, group);
}

void StoreEngine::unwatch(const Peer& peer, uint64_t watch_id) {
  auto index = watch_index_.find({peer.peer_id(), watch_id});
  if (index == watch_index_.end()) return;  // unknown ids are ignored: unwatch is idempotent
  auto& watches = index->second.target == WatchTarget::kKey ? key_watches_ : group_watches_;
  auto list = watches.find(index->second.name);
  if (list != watches.end()) {
    list->second.erase(index->first);
    if (list->second.empty()) watches.erase(list);
  }
  watch_index_.erase(index);
  auto by_peer = waiters_by_peer_.find(peer.peer_id());
  if (by_peer != waiters_by_peer_.end() && by_peer->second.watches > 0) {
    if (--by_peer->second.watches == 0 && by_peer->second.parked.empty()) {
      waiters_by_peer_.erase(by_peer);
    }
  }
}

void StoreEngine::announce_rank_down(int64_t rank, const std::string& group) {
  auto watches = group_watches_.find(group);
  if (watches == group_watches_.end()) return;
  for (const auto& [index, watch] : watches->second) {
    watch.peer->send(
        event_frame(watch.watch_id, WatchEventKind::kRankDown, "", "", rank, visible_key(group)));
  }
}

void StoreEngine::forget(const Peer& peer) {
  uint64_t id = peer.peer_id();
  auto held = waiters_by_peer_.find(id);
  if (held != waiters_by_peer_.end()) {
    std::set<uint64_t> parked = held->second.parked;  // unpark() edits the original
    for (uint64_t parked_id : parked) unpark(parked_id);
  }
  auto first = watch_index_.lower_bound({id, 0});
  std::vector<uint64_t> watch_ids;
  for (auto it = first; it != watch_index_.end() && it->first.first == id; ++it) {
    watch_ids.push_back(it->first.second);
  }
  for (uint64_t watch_id : watch_ids) unwatch(peer, watch_id);
}

void StoreEngine::clear() {
  parked_.clear();
  parked_by_key_.clear();
  key_watches_.clear();
  group_watches_.clear();
  watch_index_.clear();
  waiters_by_peer_.clear();
}

}  // namespace memloom::store
