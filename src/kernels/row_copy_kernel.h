// The gather and scatter kernels (hw/hal/kernels.h: KernelId::kGather, kScatter): copy rows
// between two matrices where one side is addressed through a list of row indices, converting the
// element type on the way when the two sides differ.
//
//   gather:  destination row i  <-  source row indices[i]
//   scatter: destination row indices[i]  <-  source row i
//
// A GPU work item is (row i, chunk c of that row) of 16 bytes, so that neighbouring threads touch
// neighbouring bytes (`body`); a CPU thread takes whole rows one after another (`copy_rows`: one
// memcpy-like copy or one conversion loop per row, the next rows prefetched). A negative index
// skips its row; an index at or past `index_bound` is not followed but recorded in `bad_index`,
// which the host reads afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/kernels/atomics.h"
#include "src/kernels/element_types.h"
#include "src/kernels/host_device.h"

namespace memloom::kernels {

// Where the rows of one matrix live: one contiguous range, or per-rank chunks (a WholeMemory
// CHUNKED global reference). Element (row, col) is at byte (offset + row * stride + col) * size
// of the logical range; with chunks, that byte lies in the chunk of the rank owning it.
struct RowTable {
  char* base;             // the contiguous range; null when `chunks` is used
  char* const* chunks;    // rank r's chunk (device-readable table of world_size pointers)
  const size_t* offsets;  // world_size + 1 byte offsets of the chunks in the logical range
  size_t chunk_stride;    // with same_chunk: the owner of byte b is b / chunk_stride
  int32_t world_size;
  int32_t same_chunk;  // 1: chunks are equal (the last ones may be shorter or empty)
  int64_t stride;      // elements between row starts
  int64_t offset;      // elements before element (0, 0)
  DType dtype;
};

struct RowCopyArgs {
  RowTable source;
  RowTable destination;
  const void* indices;            // int32 or int64, one per row of the unindexed side
  DType index_type;               // kInt or kInt64
  int64_t index_bound;            // rows of the indexed side
  int64_t columns;                // elements per row
  int64_t chunk_columns;          // elements per work item
  int64_t chunks_per_row;         // ceil(columns / chunk_columns)
  int64_t rows;                   // indices (rows of the unindexed side)
  unsigned long long* bad_index;  // 0, or 1 + the largest out-of-range index seen
};

// The byte layout of one side: row r's element (r, c) starts at byte first + r * pitch +
// c * element of the logical range. Derived once per launch on CPUs (per item on GPUs, where it
// is a few register operations).
struct RowBytes {
  size_t element;  // bytes per element
  size_t pitch;    // bytes between row starts
  size_t first;    // bytes before element (0, 0)
};

MEMLOOM_HOST_DEVICE inline RowBytes row_bytes_of(const RowTable& table) {
  const size_t element = element_size(table.dtype);
  return RowBytes{element, static_cast<size_t>(table.stride) * element,
                  static_cast<size_t>(table.offset) * element};
}

// The address of byte `byte` of the table's logical range.
MEMLOOM_HOST_DEVICE inline char* byte_address(const RowTable& table, size_t byte) {
  if (table.chunks == nullptr) return table.base + byte;
  int owner;
  if (table.same_chunk) {
    owner = static_cast<int>(byte / table.chunk_stride);
  } else {
    // The last rank whose chunk starts at or before `byte` (empty chunks start where the next
    // does).
    int low = 0, high = table.world_size - 1;
    while (low < high) {
      const int middle = (low + high + 1) / 2;
      if (table.offsets[middle] <= byte) {
        low = middle;
      } else {
        high = middle - 1;
      }
    }
    owner = low;
  }
  return table.chunks[owner] + (byte - table.offsets[owner]);
}

// The address of element (row, column) where `column_byte` = column * element.
MEMLOOM_HOST_DEVICE inline char* row_address(const RowTable& table, const RowBytes& bytes,
                                             int64_t row, size_t column_byte) {
  return byte_address(table, bytes.first + static_cast<size_t>(row) * bytes.pitch + column_byte);
}

// Where row `row` starts when all of its `length` bytes lie in one chunk of the table (always for
// a contiguous table), else null: a GPU warp then copies the row through one base pointer.
MEMLOOM_HOST_DEVICE inline char* whole_row_start(const RowTable& table, const RowBytes& bytes,
                                                 int64_t row, size_t length) {
  const size_t first = bytes.first + static_cast<size_t>(row) * bytes.pitch;
  char* start = byte_address(table, first);
  if (table.chunks == nullptr || length == 0) return start;
  return byte_address(table, first + length - 1) == start + (length - 1) ? start : nullptr;
}

MEMLOOM_HOST_DEVICE inline void record_bad_index(unsigned long long* slot,
                                                 unsigned long long value) {
  atomic_max(slot, value);
}

// Copies `bytes` with the widest accesses both addresses allow (a GPU thread has no memcpy that
// vectorises by itself; the CPU's memcpy does).
MEMLOOM_HOST_DEVICE inline void copy_bytes(char* destination, const char* source, size_t bytes) {
#if defined(__CUDA_ARCH__)
  const auto alignment =
      (reinterpret_cast<uintptr_t>(destination) | reinterpret_cast<uintptr_t>(source) | bytes);
  if ((alignment & 15) == 0) {
    for (size_t i = 0; i < bytes; i += 16) {
      *reinterpret_cast<uint4*>(destination + i) = *reinterpret_cast<const uint4*>(source + i);
    }
  } else if ((alignment & 7) == 0) {
    for (size_t i = 0; i < bytes; i += 8) {
      *reinterpret_cast<uint64_t*>(destination + i) =
          *reinterpret_cast<const uint64_t*>(source + i);
    }
  } else if ((alignment & 3) == 0) {
    for (size_t i = 0; i < bytes; i += 4) {
      *reinterpret_cast<uint32_t*>(destination + i) =
          *reinterpret_cast<const uint32_t*>(source + i);
    }
  } else {
    for (size_t i = 0; i < bytes; ++i) destination[i] = source[i];
  }
#else
  std::memcpy(destination, source, bytes);
#endif
}

MEMLOOM_HOST_DEVICE inline int64_t load_index(const RowCopyArgs& args, int64_t position) {
  if (args.index_type == DType::kInt) return static_cast<const int32_t*>(args.indices)[position];
  return static_cast<const int64_t*>(args.indices)[position];
}

// CPUs copy whole rows one after another (copy_rows) and prefetch the indexed rows about
// kPrefetchAheadBytes ahead: a random row read from memory costs a DRAM round trip that a single
// thread would otherwise wait out row after row. The prefetches ask for the second-level cache
// only (prefetcht2): filling the first level, they held the core's few first-level miss slots and
// stalled once a few rows were in flight. Measured on the 2-core EPYC VM, 512-byte rows, thread CPU
// time against memcpy's for the same bytes: first 256 bytes, 8 rows ahead, into L1: 0.48-0.57x;
// whole rows (up to 512 bytes), 16 rows ahead, into L2: 0.70-0.75x. Non-temporal stores for the
// rows written (as glibc's memcpy uses for large copies) were tried on top and dropped: with them
// the 2-rank job of memloom-bench gather took more CPU time per byte (0.62x against 0.69x of
// memcpy's on average, 8 alternated runs each).
constexpr size_t kPrefetchAheadBytes = 8192;
constexpr int64_t kPrefetchMaxRowsAhead = 64;
constexpr size_t kPrefetchRowBytes = 512;

MEMLOOM_HOST_DEVICE inline int64_t prefetch_rows_ahead(size_t row_bytes) {
  const size_t rows = row_bytes == 0 ? 1 : kPrefetchAheadBytes / row_bytes;
  if (rows < 1) return 1;
  return rows > static_cast<size_t>(kPrefetchMaxRowsAhead) ? kPrefetchMaxRowsAhead
                                                           : static_cast<int64_t>(rows);
}

MEMLOOM_HOST_DEVICE inline void prefetch_row(const RowTable& table, const RowBytes& bytes,
                                             int64_t row, size_t length, bool for_write) {
#if !defined(__CUDA_ARCH__)
  const char* start = row_address(table, bytes, row, 0);
  for (size_t offset = 0; offset < length; offset += 64) {
    if (for_write) {
      __builtin_prefetch(start + offset, 1, 1);
    } else {
      __builtin_prefetch(start + offset, 0, 1);  // prefetcht2
    }
  }
#else
  (void)table;
  (void)bytes;
  (void)row;
  (void)length;
  (void)for_write;
#endif
}

template <bool kIndexedSource>
struct IndexedRowCopy {
  using Args = RowCopyArgs;

  // Whether the row paired with `index` is copied: a negative index skips it, one past the table
  // is recorded for the host and skips it too.
  MEMLOOM_HOST_DEVICE static bool follow(const Args& args, int64_t index) {
    if (index < 0) return false;
    if (index >= args.index_bound) {
      record_bad_index(args.bad_index, static_cast<unsigned long long>(index) + 1);
      return false;
    }
    return true;
  }

  // Copies (or converts) `count` elements from column `first` on, between row `row` of the
  // unindexed side and row `index` of the indexed one.
  MEMLOOM_HOST_DEVICE static void copy_part(const Args& args, const RowBytes& source,
                                            const RowBytes& destination, int64_t row, int64_t index,
                                            int64_t first, int64_t count) {
    const int64_t source_row = kIndexedSource ? index : row;
    const int64_t destination_row = kIndexedSource ? row : index;
    const auto column = static_cast<size_t>(first);
    const char* from = row_address(args.source, source, source_row, column * source.element);
    char* to =
        row_address(args.destination, destination, destination_row, column * destination.element);
    if (args.source.dtype == args.destination.dtype) {
      copy_bytes(to, from, static_cast<size_t>(count) * source.element);
    } else {
      convert_elements(args.source.dtype, args.destination.dtype, from, to,
                       static_cast<size_t>(count));
    }
  }

  // One work item: chunk `item % chunks_per_row` of row `item / chunks_per_row` (a GPU thread's
  // share; CPUs use copy_rows).
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    const auto chunks = static_cast<size_t>(args.chunks_per_row);
    size_t row_number, part;
#if defined(__CUDA_ARCH__)
    // A GPU divides 64-bit integers in software (dozens of instructions per work item of 16
    // bytes); 32 bits do whenever the item count fits.
    if (item <= 0xffffffffu && chunks <= 0xffffffffu) {
      const auto item32 = static_cast<uint32_t>(item), chunks32 = static_cast<uint32_t>(chunks);
      row_number = item32 / chunks32;
      part = item32 - static_cast<uint32_t>(row_number) * chunks32;
    } else
#endif
    {
      row_number = item / chunks;
      part = item % chunks;
    }
    const auto row = static_cast<int64_t>(row_number);
    const int64_t first = static_cast<int64_t>(part) * args.chunk_columns;
    const int64_t index = load_index(args, row);
    if (!follow(args, index)) return;
    const int64_t count =
        args.columns - first < args.chunk_columns ? args.columns - first : args.chunk_columns;
    copy_part(args, row_bytes_of(args.source), row_bytes_of(args.destination), row, index, first,
              count);
  }

  // Whole rows [begin, end) one after another, the indexed rows prefetched ahead: what a CPU thread
  // runs (work item = row, chunks_per_row == 1). The layouts are derived once, and the arguments
  // are copied so that the compiler knows the rows written do not change them.
  MEMLOOM_HOST_DEVICE static void copy_rows(const Args& shared, int64_t begin, int64_t end) {
    const Args args = shared;
    const RowBytes source = row_bytes_of(args.source);
    const RowBytes destination = row_bytes_of(args.destination);
    const RowTable& indexed = kIndexedSource ? args.source : args.destination;
    const RowBytes& indexed_bytes = kIndexedSource ? source : destination;
    const size_t row_length = static_cast<size_t>(args.columns) * indexed_bytes.element;
    const size_t prefetch_length = row_length < kPrefetchRowBytes ? row_length : kPrefetchRowBytes;
    const int64_t ahead = prefetch_rows_ahead(row_length);
    for (int64_t row = begin; row < end; ++row) {
      if (row + ahead < end) {
        const int64_t next = load_index(args, row + ahead);
        if (next >= 0 && next < args.index_bound) {
          prefetch_row(indexed, indexed_bytes, next, prefetch_length, !kIndexedSource);
        }
      }
      const int64_t index = load_index(args, row);
      if (!follow(args, index)) continue;
      copy_part(args, source, destination, row, index, 0, args.columns);
    }
  }
};

using GatherKernel = IndexedRowCopy<true>;
using ScatterKernel = IndexedRowCopy<false>;

}  // namespace memloom::kernels
