// Opaque C handles (embeddings, optimizers, cache policies) as ids in a table, so that a destroyed
// or garbage handle is refused with kInvalidInput instead of dereferenced.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "memloom/error.h"

namespace memloom::wholememory {

template <typename Object, typename Handle>
class HandleTable {
 public:
  explicit HandleTable(const char* kind) : kind_(kind) {}

  Handle add(std::shared_ptr<Object> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uintptr_t id = ++last_id_;
    objects_[id] = std::move(object);
    return reinterpret_cast<Handle>(id);
  }
  std::shared_ptr<Object> get(Handle handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return find_locked(handle)->second;
  }
  std::shared_ptr<Object> remove(Handle handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = find_locked(handle);
    auto object = std::move(found->second);
    objects_.erase(found);
    return object;
  }

 private:
  using Map = std::map<uintptr_t, std::shared_ptr<Object>>;
  typename Map::const_iterator find_locked(Handle handle) const {
    const auto found = objects_.find(reinterpret_cast<uintptr_t>(handle));
    if (found == objects_.end()) {
      raise(Status::kInvalidInput,
            std::string(kind_) + " handle is not live (null, destroyed or never created)");
    }
    return found;
  }

  const char* kind_;
  mutable std::mutex mutex_;
  uintptr_t last_id_ = 0;
  Map objects_;
};

}  // namespace memloom::wholememory
