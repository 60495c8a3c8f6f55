// The bookkeeping every MemoryDomain keeps in the same way, with the HAL contract's checks and
// messages: the mappings made by map_anywhere (unmap_anywhere must name one exactly) and the user
// memory registered with register_user_memory (ranges that never overlap; the same range twice is
// harmless). Each backend keeps its own payload (what it must undo) and does its own system
// calls; the rules and their wording live here once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/range_map.h"

namespace memloom::host {

template <typename Payload>
class AnywhereMappings : public base::RangeMap<Payload> {
 public:
  using Interval = typename base::RangeMap<Payload>::Interval;

  // The mapping at `address`, which unmap_anywhere(address, size) may undo. Throws kInvalidInput
  // when nothing was mapped there or the size differs from the mapping's.
  const Interval& expect(void* address, size_t size) const {
    const auto start = reinterpret_cast<uintptr_t>(address);
    const Interval* mapping = this->find(start);
    if (mapping == nullptr) {
      raise(Status::kInvalidInput, "unmap_anywhere: nothing was mapped at " + base::hex(start));
    }
    if (mapping->size != size) {
      raise(Status::kInvalidInput, "unmap_anywhere: the mapping at " + base::hex(start) + " has " +
                                       std::to_string(mapping->size) + " bytes, not " +
                                       std::to_string(size));
    }
    return *mapping;
  }
};

template <typename Payload>
class UserRegistrations : public base::RangeMap<Payload> {
 public:
  using Interval = typename base::RangeMap<Payload>::Interval;

  // register_user_memory's argument checks: a non-null address, a non-zero size, no wrap-around.
  // Returns the range's start.
  static uintptr_t check_range(void* address, size_t size) {
    MEMLOOM_CHECK_ARG(address != nullptr && size > 0,
                      "register_user_memory needs a non-null address and a non-zero size");
    const auto start = reinterpret_cast<uintptr_t>(address);
    if (start + size < start) {
      raise(Status::kInvalidInput, "register_user_memory: range wraps around");
    }
    return start;
  }

  // True when exactly [start, start + size) is registered already (registering it again is
  // harmless); false when the range is free. Throws kInvalidInput when it overlaps another one.
  bool already_registered(uintptr_t start, size_t size) const {
    const Interval* clash = this->overlapping(start, size);
    if (clash == nullptr) return false;
    if (clash->is(start, size)) return true;
    raise(Status::kInvalidInput, "register_user_memory: [" + base::hex(start) + ", +" +
                                     std::to_string(size) + ") overlaps the registered [" +
                                     base::hex(clash->start) + ", +" + std::to_string(clash->size) +
                                     ")");
  }

  // The registration that starts at `address`, which unregister_user_memory may undo. Throws
  // kInvalidInput otherwise.
  const Interval& expect_start(void* address) const {
    const auto start = reinterpret_cast<uintptr_t>(address);
    const Interval* registration = this->find(start);
    if (registration == nullptr) {
      raise(Status::kInvalidInput, "unregister_user_memory: " + base::hex(start) +
                                       " is not the start of registered memory");
    }
    return *registration;
  }
};

}  // namespace memloom::host
