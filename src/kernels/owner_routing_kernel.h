// The routing kernels of exchanging gathers and scatters (hw/hal/kernels.h:
// KernelId::kCountByOwner, kPlaceByOwner): bucket a caller's index list by the rank owning each
// row's storage entry, on the device that holds the list, so that only a few counts cross to the
// host.
//
//   count: per row, its destination's counter += 1; a row past the table records its position
//          (the smallest such position wins, so the host can report the list's first bad index);
//   place: with the counters set to each destination's first slot (an exclusive scan of the
//          counts), each row takes the next slot of its destination's bucket: keys[slot] = its
//          entry (in the owner's partition, or global), slot_of_row[row] = slot (-1 for a row that
//          asks for nothing), and row_in_slot[slot] = row.
//
// A row's destination is its owner (DISTRIBUTED), or with a destination table the rank its
// owner's requests go to in the communicator the keys travel over (HIERARCHY: the gateway of my
// node for the owner's node, which wants global entries to de-duplicate requests across owners).
//
// A negative index asks for nothing. The order of rows inside a bucket is whatever order the
// threads took their slots in: every row knows its slot, so a gather puts its rows back in list
// order regardless, and a scatter that names one row twice stores one of them (as the API says).
//
// A GPU runs one row per work item (`body`; the increments are warp-aggregated, see atomics.h); a
// CPU thread takes a range of rows (`count_rows`, `place_rows`) and touches each shared counter
// once per range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/kernels/atomics.h"
#include "src/kernels/element_types.h"
#include "src/kernels/host_device.h"

namespace memloom::kernels {

struct OwnerRoutingArgs {
  const void* indices;           // int32 or int64, one per row of the caller's list
  DType index_type;              // kInt or kInt64
  int64_t rows;                  // indices in the list
  int64_t table_rows;            // an index at or past this is bad
  int64_t first_entry;           // the storage entry of table row 0 (sub-tensors start later)
  const int64_t* entry_offsets;  // world_size + 1: rank r holds entries [offsets[r], offsets[r+1])
  int32_t world_size;
  // Null: each owner is its own destination. Else world_size destinations, each below world_size.
  const int64_t* destination_of_owner;
  // Keys are global entries rather than entries in the owner's partition.
  bool global_keys;
  // count: per-destination counts, zero before the launch. place: per-destination cursors, set to
  // the destinations' first slots before the launch.
  unsigned long long* per_owner;
  unsigned long long* first_bad_row;  // count: all ones before the launch
  int64_t* keys;                      // place: one per slot
  int64_t* slot_of_row;               // place: one per row
  int64_t* row_in_slot;               // place: one per slot, or null when not wanted
};

MEMLOOM_HOST_DEVICE inline int64_t routed_index(const OwnerRoutingArgs& args, int64_t row) {
  if (args.index_type == DType::kInt) return static_cast<const int32_t*>(args.indices)[row];
  return static_cast<const int64_t*>(args.indices)[row];
}

// The last rank whose partition starts at or before `entry` (offsets[0] is 0): an empty partition
// starts where the next one does, so it is passed over. Branch-free (the loop runs log2(world_size)
// times whatever the entry): with random indices a branch on the comparison is mispredicted half
// the time, which made this search most of a CPU thread's time per row (counting 1M random rows
// on one thread of the 2-core VM: 6.7 ms with the branch, 1.3 ms without, 2 ranks; 15 and 2.5 ms,
// 8 ranks).
MEMLOOM_HOST_DEVICE inline int32_t owner_of_entry(const OwnerRoutingArgs& args, int64_t entry) {
  int32_t base = 0, span = args.world_size;  // the owner is in [base, base + span)
  while (span > 1) {
    const int32_t half = span / 2;
    base = args.entry_offsets[base + half] <= entry ? base + half : base;
    span -= half;
  }
  return base;
}

// What a row asks for: kSkipped (negative index), kBad (past the table), else its owner.
constexpr int32_t kSkippedRow = -1;
constexpr int32_t kBadRow = -2;

MEMLOOM_HOST_DEVICE inline int32_t owner_of_row(const OwnerRoutingArgs& args, int64_t row,
                                                int64_t* entry) {
  const int64_t index = routed_index(args, row);
  if (index < 0) return kSkippedRow;
  if (index >= args.table_rows) return kBadRow;
  *entry = args.first_entry + index;
  return owner_of_entry(args, *entry);
}

// The counter (bucket) of an owner's requests. The branch goes the same way for every row.
MEMLOOM_HOST_DEVICE inline int32_t destination_of(const OwnerRoutingArgs& args, int32_t owner) {
  if (args.destination_of_owner == nullptr) return owner;
  return static_cast<int32_t>(args.destination_of_owner[owner]);
}

MEMLOOM_HOST_DEVICE inline void place_row(const OwnerRoutingArgs& args, int64_t row, int32_t owner,
                                          int64_t entry, unsigned long long slot) {
  const auto at = static_cast<int64_t>(slot);
  args.keys[at] = args.global_keys ? entry : entry - args.entry_offsets[owner];
  args.slot_of_row[row] = at;
  if (args.row_in_slot != nullptr) args.row_in_slot[at] = row;
}

struct CountByOwner {
  using Args = OwnerRoutingArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto row = static_cast<int64_t>(item);
    int64_t entry = 0;
    const int32_t owner = owner_of_row(args, row, &entry);
    if (owner == kBadRow) atomic_min(args.first_bad_row, static_cast<unsigned long long>(row));
    if (owner >= 0) atomic_increment(args.per_owner + destination_of(args, owner));
  }

  // Rows [begin, end) on a CPU thread: counts kept locally per owner, added once per owner to its
  // destination's counter.
  static void count_rows(const Args& args, int64_t begin, int64_t end) {
    std::vector<unsigned long long> counts(static_cast<size_t>(args.world_size), 0);
    unsigned long long first_bad = ~0ull;
    for (int64_t row = begin; row < end; ++row) {
      int64_t entry = 0;
      const int32_t owner = owner_of_row(args, row, &entry);
      if (owner >= 0) {
        ++counts[static_cast<size_t>(owner)];
      } else if (owner == kBadRow && first_bad == ~0ull) {
        first_bad = static_cast<unsigned long long>(row);
      }
    }
    for (size_t owner = 0; owner < counts.size(); ++owner) {
      if (counts[owner] == 0) continue;
      atomic_fetch_add(args.per_owner + destination_of(args, static_cast<int32_t>(owner)),
                       counts[owner]);
    }
    if (first_bad != ~0ull) atomic_min(args.first_bad_row, first_bad);
  }
};

struct PlaceByOwner {
  using Args = OwnerRoutingArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto row = static_cast<int64_t>(item);
    int64_t entry = 0;
    const int32_t owner = owner_of_row(args, row, &entry);
    if (owner < 0) {
      args.slot_of_row[row] = -1;  // skipped (the host never places a list with bad rows)
      return;
    }
    place_row(args, row, owner, entry,
              atomic_increment(args.per_owner + destination_of(args, owner)));
  }

  // Rows [begin, end) on a CPU thread: one reservation per owner (a run of slots in its
  // destination's bucket), then the range's rows of each owner in list order.
  static void place_rows(const Args& args, int64_t begin, int64_t end) {
    const auto owners = static_cast<size_t>(args.world_size);
    std::vector<int32_t> owner_of(static_cast<size_t>(end - begin));
    std::vector<unsigned long long> next(owners, 0);
    for (int64_t row = begin; row < end; ++row) {
      int64_t entry = 0;
      const int32_t owner = owner_of_row(args, row, &entry);
      owner_of[static_cast<size_t>(row - begin)] = owner;
      if (owner >= 0) ++next[static_cast<size_t>(owner)];
    }
    for (size_t owner = 0; owner < owners; ++owner) {
      if (next[owner] == 0) continue;
      next[owner] = atomic_fetch_add(
          args.per_owner + destination_of(args, static_cast<int32_t>(owner)), next[owner]);
    }
    for (int64_t row = begin; row < end; ++row) {
      const int32_t owner = owner_of[static_cast<size_t>(row - begin)];
      if (owner < 0) {
        args.slot_of_row[row] = -1;
        continue;
      }
      const int64_t entry = args.first_entry + routed_index(args, row);
      place_row(args, row, owner, entry, next[static_cast<size_t>(owner)]++);
    }
  }
};

}  // namespace memloom::kernels
