// The host ranges memloom page-locked with cudaHostRegister, and copies cut at their edges.
//
// CUDA refuses (cudaErrorInvalidValue) a copy whose host range is partly registered, and, as far as
// memloom has seen, one that runs from one registration into another right beside it: rank 1 of
// Ops/UnevenChunks.../Host failed so on an H100 (2026-12-07). WholeMemory's contiguous host ranges
// are exactly that: every rank's pages are a segment registered on its own, mapped side by side,
// and a rank's rows may start in the last page of the rank before it (partitions are cut by rows,
// pages by the granularity). On the emulated backend the same copy is one memcpy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memloom::cuda {

// Records a range just registered with cudaHostRegister.
void note_host_registered(const void* address, size_t size);
// Forgets the registration that starts at `address` (before it is unregistered).
void note_host_unregistered(const void* address);

// The leading bytes of a copy of `bytes` from `src` to `dst` that cross no edge of a recorded
// registration on either side: on each, up to the end of the one that holds the address, or up to
// the start of the next one.
size_t bytes_before_registration_edge(const void* dst, const void* src, size_t bytes);

// Calls `copy(dst, src, bytes)` for consecutive pieces of the copy, none crossing an edge of a
// registration on either side.
template <typename Copy>
void copy_within_registrations(void* dst, const void* src, size_t bytes, Copy copy) {
  auto* to = static_cast<std::byte*>(dst);
  const auto* from = static_cast<const std::byte*>(src);
  while (bytes > 0) {
    const size_t piece = bytes_before_registration_edge(to, from, bytes);
    copy(to, from, piece);
    to += piece;
    from += piece;
    bytes -= piece;
  }
}

}  // namespace memloom::cuda
