// The gather and scatter kernels (hw/hal/kernels.h: KernelId::kGather, kScatter): copy rows
// between two matrices where one side is addressed through a list of row indices, converting the
// element type on the way when the two sides differ.
//
//   gather:  destination row i  <-  source row indices[i]
//   scatter: destination row indices[i]  <-  source row i
//
// A work item is (row i, chunk c of that row); the dispatcher picks the chunk width: a whole row
// on CPU threads (one memcpy-like copy or one conversion loop per item), 16 bytes on a GPU (so
// neighbouring threads touch neighbouring bytes). A negative index skips its row; an index at or
// past `index_bound` is not followed but recorded in `bad_index`, which the host reads afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/ops/element_types.h"
#include "src/ops/host_device.h"

namespace memloom::ops {

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

MEMLOOM_HOST_DEVICE inline char* element_address(const RowTable& table, int64_t row,
                                                 int64_t column) {
  const size_t size = element_size(table.dtype);
  const size_t byte = static_cast<size_t>(table.offset + row * table.stride + column) * size;
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

MEMLOOM_HOST_DEVICE inline void record_bad_index(unsigned long long* slot,
                                                 unsigned long long value) {
#if defined(__CUDA_ARCH__)
  atomicMax(slot, value);
#else
  unsigned long long seen = __atomic_load_n(slot, __ATOMIC_RELAXED);
  while (seen < value && !__atomic_compare_exchange_n(slot, &seen, value, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
  }
#endif
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

// Rows this many items ahead are prefetched on CPUs: a random row read from memory costs a DRAM
// round trip that a single thread would otherwise wait out row after row. Only a row's first
// bytes are asked for (the hardware prefetchers fetch the lines after them); asking for whole wide
// rows was measured slower (512-byte rows, 2-core VM: ~0.55x against ~0.7x of memcpy), as the
// outstanding requests then exceed what a core tracks and the prefetches stall.
constexpr int64_t kPrefetchRowsAhead = 8;
constexpr size_t kPrefetchBytes = 256;

MEMLOOM_HOST_DEVICE inline void prefetch_row(const RowCopyArgs& args, bool indexed_source,
                                             int64_t row) {
#if !defined(__CUDA_ARCH__)
  if (row >= args.rows) return;
  const int64_t index = load_index(args, row);
  if (index < 0 || index >= args.index_bound) return;
  const RowTable& table = indexed_source ? args.source : args.destination;
  const char* start = element_address(table, index, 0);
  size_t bytes = static_cast<size_t>(args.columns) * element_size(table.dtype);
  if (bytes > kPrefetchBytes) bytes = kPrefetchBytes;
  for (size_t offset = 0; offset < bytes; offset += 64) {
    if (indexed_source) {
      __builtin_prefetch(start + offset, 0);
    } else {
      __builtin_prefetch(start + offset, 1);
    }
  }
#else
  (void)args;
  (void)indexed_source;
  (void)row;
#endif
}

template <bool kIndexedSource>
struct IndexedRowCopy {
  using Args = RowCopyArgs;
  MEMLOOM_HOST_DEVICE static void body(const Args& args, size_t item) {
    int64_t row, first;
    if (args.chunks_per_row == 1) {  // whole rows (the CPU's choice): no division
      row = static_cast<int64_t>(item);
      first = 0;
      prefetch_row(args, kIndexedSource, row + kPrefetchRowsAhead);
    } else {
      row = static_cast<int64_t>(item / static_cast<size_t>(args.chunks_per_row));
      first = static_cast<int64_t>(item % static_cast<size_t>(args.chunks_per_row)) *
              args.chunk_columns;
    }
    const int64_t index = load_index(args, row);
    if (index < 0) return;
    if (index >= args.index_bound) {
      record_bad_index(args.bad_index, static_cast<unsigned long long>(index) + 1);
      return;
    }
    const int64_t source_row = kIndexedSource ? index : row;
    const int64_t destination_row = kIndexedSource ? row : index;
    const int64_t count =
        args.columns - first < args.chunk_columns ? args.columns - first : args.chunk_columns;
    const char* from = element_address(args.source, source_row, first);
    char* to = element_address(args.destination, destination_row, first);
    if (args.source.dtype == args.destination.dtype) {
      copy_bytes(to, from, static_cast<size_t>(count) * element_size(args.source.dtype));
    } else {
      convert_elements(args.source.dtype, args.destination.dtype, from, to,
                       static_cast<size_t>(count));
    }
  }
};

using GatherKernel = IndexedRowCopy<true>;
using ScatterKernel = IndexedRowCopy<false>;

}  // namespace memloom::ops
