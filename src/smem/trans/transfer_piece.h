// What the same-node data paths move: pieces of at most kMaxPieceBytes between a local buffer and
// an address in a peer's registered memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memloom::smem::trans {

enum class Direction { kRead, kWrite };

// A copy holds its regions (region_table.h) for one piece at a time: deregistration waits at most
// that long.
inline constexpr uint64_t kMaxPieceBytes = 16ull << 20;

struct Piece {
  uint64_t remote;  // an address in the peer's process
  char* local;      // destination of a read, source of a write
  uint64_t bytes;
};

// Cuts `bytes` at (local, remote) into pieces of at most max_piece bytes, appended to `out`.
inline void append_pieces(std::vector<Piece>& out, char* local, uint64_t remote, uint64_t bytes,
                          uint64_t max_piece) {
  while (bytes > 0) {
    uint64_t step = bytes < max_piece ? bytes : max_piece;
    out.push_back(Piece{remote, local, step});
    local += step;
    remote += step;
    bytes -= step;
  }
}

// The end of the window of pieces starting at `begin` that a data path copies at once: at most
// `max_pieces` pieces and `max_bytes` bytes, and at least one piece.
inline size_t window_end(const std::vector<Piece>& pieces, size_t begin, size_t max_pieces,
                         uint64_t max_bytes) {
  size_t end = begin;
  uint64_t bytes = 0;
  while (end < pieces.size() && end - begin < max_pieces &&
         (end == begin || bytes + pieces[end].bytes <= max_bytes)) {
    bytes += pieces[end].bytes;
    ++end;
  }
  return end;
}

}  // namespace memloom::smem::trans
