// Requests a UCX transport sent and waits to hear back about, by id: the requester's side of the
// job proof (ucx_job_gate.h), of remote-key requests (ucx_endpoints.h) and of am transfers
// (ucx_am_requests.h). The waiter adds an entry and forgets it when it stops waiting, whatever the
// outcome; a reply handler finds the entry by the id the reply carries, and drops a reply for an
// id no longer here (the waiter timed out). Entries are shared, so a handler may fill one in
// outside the table's lock; their fields are guarded by the table's mutex (lock()).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace memloom::host {

template <typename Entry>
class UcxPendingTable {
 public:
  // Adds `entry` under a fresh id; the returned guard forgets it when it goes out of scope.
  class Registration {
   public:
    Registration(UcxPendingTable& table, uint64_t id) : table_(&table), id_(id) {}
    ~Registration() {
      if (table_ != nullptr) table_->forget(id_);
    }
    Registration(Registration&& other) noexcept  // (no copies, no assignment)
        : table_(std::exchange(other.table_, nullptr)), id_(other.id_) {}
    uint64_t id() const { return id_; }

   private:
    UcxPendingTable* table_;
    uint64_t id_;
  };

  Registration add(std::shared_ptr<Entry> entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = next_id_++;
    entries_.emplace(id, std::move(entry));
    return Registration(*this, id);
  }

  // The entry of `id`, or null when its waiter forgot it.
  std::shared_ptr<Entry> find(uint64_t id) {
    auto held = lock();
    return find_locked(id, held);
  }

  // The same, for a caller that holds lock() (`held`) and keeps it while it works on the entry:
  // its waiter cannot forget it meanwhile.
  std::shared_ptr<Entry> find_locked(uint64_t id, const std::unique_lock<std::mutex>& held) {
    (void)held;
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : it->second;
  }

  void forget(uint64_t id) {
    std::shared_ptr<Entry> dropped;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    dropped = std::move(it->second);
    entries_.erase(it);
  }

  // The mutex that guards the entries' fields.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

 private:
  std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<Entry>> entries_;
  uint64_t next_id_ = 1;
};

}  // namespace memloom::host
