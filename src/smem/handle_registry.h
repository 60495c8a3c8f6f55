// The live objects of one MemFabric facade (BM, SHM, TRANS) by the opaque handle the C caller
// holds, and the facade's session (what its *_init opened) under the same lock. Every call looks
// its handle up here, so a stale, foreign or destroyed handle is an error and never a crash; and
// *_uninit takes the session and every object out at once, so no call can register an object
// into a session that is going away.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/smem/smem_facade.h"
#include "src/smem/smem_world.h"

namespace memloom::smem {

// The messages of one facade's refusals, verbatim in its C API (tests and callers match them).
struct HandleTexts {
  const char* null_handle;
  const char* not_live;             // the handle names no live object
  const char* not_live_on_destroy;  // the same, seen by *_destroy
  const char* not_initialized;      // SMEM_NOT_INITIALIZED: *_init has not been called
  const char* id_owner;             // "<id_owner> id N is in use"; only where objects have ids
  // BM and SHM objects live in their session's world, so their handles are refused without one;
  // TRANS engines stand alone: a handle is only ever refused as not live, and uninit always runs.
  bool handles_need_session;
  // What a call before *_init returns: SMEM_NOT_INITIALIZED for BM and SHM, SMEM_INVALID_PARAM
  // for TRANS, as MemFabric's facades do.
  int32_t not_initialized_code;
};

// Handles are never reused within the process (object addresses are: the allocator recycles
// them), so a destroyed handle stays invalid instead of silently naming a newer object. One counter
// for all facades: a handle of one facade passed to another is refused too.
inline void* fresh_handle() {
  static std::atomic<uintptr_t> next{0x5e000};
  return reinterpret_cast<void*>(next.fetch_add(16));
}

// The session of a facade whose objects live in a world (BM, SHM): the world *_init joined and the
// config it was given.
template <typename Config>
struct WorldSession {
  std::shared_ptr<SmemWorld> world;
  Config config{};
  explicit operator bool() const { return world != nullptr; }
};

// Session: the facade's state between *_init and *_uninit, default-constructed when closed and
// true (explicit operator bool) while open. Object: what a handle names (id() where ids are used).
template <typename Object, typename Session>
class HandleRegistry {
 public:
  // Passed to the members that need the registry's lock held: the session is guarded by it too.
  using Lock = std::unique_lock<std::mutex>;

  explicit HandleRegistry(const HandleTexts& texts) : texts_(texts) {}

  Lock lock() { return Lock(mutex_); }
  Session& session(const Lock& /*held*/) { return session_; }
  // The session, or SMEM_NOT_INITIALIZED.
  Session& open_session(const Lock& /*held*/) {
    if (!session_) {
      throw FacadeError(texts_.not_initialized_code, Status::kInvalidInput, texts_.not_initialized);
    }
    return session_;
  }
  // *_init: fill(session) opens the session, under the lock, so a concurrent *_init waits for it.
  // While a session is open a later *_init succeeds and changes nothing, as in MemFabric; it is
  // logged (`repeated`) since its arguments are ignored.
  template <typename Fill>
  void open(const char* repeated, Fill&& fill) {
    Lock held = lock();
    if (session_) {
      MEMLOOM_LOG(kInfo, repeated);
      return;
    }
    fill(session_);
  }
  void require_open() {
    Lock held = lock();
    open_session(held);
  }
  // *_create of an object with an id, in the open session. Under the lock: the session and the id
  // are checked, then prepare(session) (more checks, values from the config). Outside it, since
  // creation is collective and slow: make(instance) builds the object, where `instance` counts
  // this process's earlier objects with the id (all sessions), so every rank derives the same
  // fresh store keys. The object is refused with `raced` when the session closed meanwhile.
  template <typename Prepare, typename Make>
  void* create(uint32_t id, Prepare&& prepare, Make&& make, const char* raced) {
    uint64_t instance = 0;
    uint64_t generation = 0;
    {
      Lock held = lock();
      Session& session = open_session(held);
      for (const auto& [handle, object] : objects_) {
        MEMLOOM_CHECK_ARG(object->id() != id, std::string(texts_.id_owner) + " id " +
                                                  std::to_string(id) +
                                                  " is in use (destroy it first)");
      }
      prepare(session);
      instance = instances_[id]++;
      generation = generation_;
    }
    std::shared_ptr<Object> object = make(instance);
    Lock held = lock();
    if (generation_ != generation) raise(Status::kCommunication, raced);
    return insert(held, std::move(object));
  }

  void* add(std::shared_ptr<Object> object) {
    Lock held = lock();
    return insert(held, std::move(object));
  }

  std::shared_ptr<Object> lookup(const void* handle) {
    MEMLOOM_CHECK_ARG(handle != nullptr, texts_.null_handle);
    Lock held = lock();
    if (texts_.handles_need_session) open_session(held);
    return find(handle, texts_.not_live)->second;
  }

  // The caller holds the last reference, released outside the lock (unless another thread is
  // still inside a call on the object).
  std::shared_ptr<Object> remove(const void* handle) {
    MEMLOOM_CHECK_ARG(handle != nullptr, texts_.null_handle);
    Lock held = lock();
    if (texts_.handles_need_session) open_session(held);
    auto found = find(handle, texts_.not_live_on_destroy);
    std::shared_ptr<Object> object = std::move(found->second);
    objects_.erase(found);
    return object;
  }

  // *_uninit. `each` sees every object first; the objects are released outside the lock, before
  // the session they live in.
  template <typename Each>
  void close(Each&& each) {
    Objects objects;
    Session session{};
    {
      Lock held = lock();
      if (texts_.handles_need_session) open_session(held);
      objects.swap(objects_);
      std::swap(session, session_);
      ++generation_;
    }
    for (auto& [handle, object] : objects) each(*object);
    objects.clear();
  }
  void close() {
    close([](Object&) {});
  }

 private:
  using Objects = std::map<const void*, std::shared_ptr<Object>>;

  void* insert(const Lock& /*held*/, std::shared_ptr<Object> object) {
    void* handle = fresh_handle();
    objects_.emplace(handle, std::move(object));
    return handle;
  }

  typename Objects::iterator find(const void* handle, const char* not_live) {
    auto found = objects_.find(handle);
    MEMLOOM_CHECK_ARG(found != objects_.end(), not_live);
    return found;
  }

  const HandleTexts texts_;
  std::mutex mutex_;
  Session session_{};
  uint64_t generation_ = 0;  // sessions closed so far
  Objects objects_;
  std::map<uint32_t, uint64_t> instances_;
};

}  // namespace memloom::smem
