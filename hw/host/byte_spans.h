// Scatter/gather lists: collectives move a logical byte stream that lives in several user
// buffers (e.g. the pieces of every remote rank in an allgatherv) through fixed-size chunks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace memloom::host {

struct ByteSpan {
  std::byte* data = nullptr;
  size_t bytes = 0;
};

struct ConstByteSpan {
  const std::byte* data = nullptr;
  size_t bytes = 0;
};

template <typename S>
size_t total_bytes(const std::vector<S>& segments) {
  size_t total = 0;
  for (const auto& s : segments) total += s.bytes;
  return total;
}

// Walks a segment list as one stream, copying into or out of it.
template <typename S>
class ByteSpanCursor {
 public:
  explicit ByteSpanCursor(const std::vector<S>& segments) : segments_(segments) {}

  // Copies the next `bytes` of the stream to `out` (S = ConstByteSpan or ByteSpan).
  void read(std::byte* out, size_t bytes) {
    walk(bytes, [&](std::byte* stream, size_t n) { std::memcpy(out, stream, n), out += n; });
  }
  // Copies `bytes` from `in` into the next part of the stream (S = ByteSpan).
  void write(const std::byte* in, size_t bytes) {
    walk(bytes, [&](std::byte* stream, size_t n) { std::memcpy(stream, in, n), in += n; });
  }

 private:
  template <typename F>
  void walk(size_t bytes, F&& copy) {
    while (bytes > 0 && index_ < segments_.size()) {
      const S& s = segments_[index_];
      size_t n = std::min(bytes, s.bytes - offset_);
      if (n > 0) copy(const_cast<std::byte*>(s.data) + offset_, n);
      bytes -= n;
      offset_ += n;
      if (offset_ == s.bytes) {
        ++index_;
        offset_ = 0;
      }
    }
  }

  const std::vector<S>& segments_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

}  // namespace memloom::host
