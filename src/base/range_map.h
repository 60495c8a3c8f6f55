// Address intervals [start, start + size) that never overlap, each with a payload, kept by start:
// registered user memory, mappings, exposed ranges, published regions. One copy of the overlap and
// containment arithmetic, so every such table treats the edges the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>
#include <variant>

namespace memloom::base {

// The free functions serve tables whose map type is declared elsewhere (start -> value, disjoint
// intervals); new tables use RangeMap. `size_of(value)` is an entry's length: by default the
// value itself.
struct ValueIsLength {
  uint64_t operator()(uint64_t length) const { return length; }
};

// The entry of `map` that [start, start + size) overlaps: the lower one where it overlaps two,
// map.end() where it overlaps none.
template <typename Map, typename SizeOf = ValueIsLength>
typename Map::const_iterator first_overlap(const Map& map, uint64_t start, uint64_t size,
                                           SizeOf size_of = {}) {
  auto next = map.lower_bound(start);
  if (next != map.begin()) {
    auto previous = std::prev(next);
    if (previous->first + size_of(previous->second) > start) return previous;
  }
  if (next != map.end() && next->first < start + size) return next;
  return map.end();
}

// The entry of `map` that holds all of [address, address + bytes) (none of it outside), or
// map.end().
template <typename Map, typename SizeOf = ValueIsLength>
typename Map::const_iterator find_containing(const Map& map, uint64_t address, uint64_t bytes,
                                             SizeOf size_of = {}) {
  auto after = map.upper_bound(address);
  if (after == map.begin()) return map.end();
  auto range = std::prev(after);
  const uint64_t offset = address - range->first;
  const uint64_t size = size_of(range->second);
  return offset <= size && bytes <= size - offset ? range : map.end();
}

template <typename Payload = std::monostate>
class RangeMap {
 public:
  struct Interval {
    uint64_t start = 0;
    uint64_t size = 0;
    Payload payload{};
    bool is(uint64_t other_start, uint64_t other_size) const {
      return start == other_start && size == other_size;
    }
  };

  // The interval that [start, start + size) overlaps (the lower of two), or null.
  const Interval* overlapping(uint64_t start, uint64_t size) const {
    return pointer(first_overlap(intervals_, start, size, size_of));
  }

  // Adds [start, start + size) unless it overlaps an interval already here: then the map stays as
  // it was and that interval is returned (the lower of two). Null once added.
  const Interval* insert(uint64_t start, uint64_t size, Payload payload = {}) {
    if (const Interval* clash = overlapping(start, size)) return clash;
    intervals_.emplace(start, Interval{start, size, std::move(payload)});
    return nullptr;
  }

  // The interval that holds all of [address, address + bytes), or null.
  const Interval* find_containing(uint64_t address, uint64_t bytes) const {
    return pointer(base::find_containing(intervals_, address, bytes, size_of));
  }

  // The interval that starts exactly at `start`, or null.
  const Interval* find(uint64_t start) const { return pointer(intervals_.find(start)); }

  // Removes the interval that starts at `start`; false when there is none.
  bool erase(uint64_t start) { return intervals_.erase(start) != 0; }

  size_t size() const { return intervals_.size(); }
  bool empty() const { return intervals_.empty(); }
  // (start, Interval) pairs in address order.
  auto begin() const { return intervals_.begin(); }
  auto end() const { return intervals_.end(); }

 private:
  using Map = std::map<uint64_t, Interval>;
  static uint64_t size_of(const Interval& interval) { return interval.size; }
  const Interval* pointer(typename Map::const_iterator it) const {
    return it == intervals_.end() ? nullptr : &it->second;
  }

  Map intervals_;
};

}  // namespace memloom::base
