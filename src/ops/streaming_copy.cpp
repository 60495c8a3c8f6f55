#include "src/ops/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MEMLOOM_X86_STREAMING 1
#endif

namespace memloom::ops {

#if defined(MEMLOOM_X86_STREAMING)
namespace {

constexpr size_t kLine = 64;

// The plain copies around the whole lines: bytes before the destination's first line boundary
// (returned: where the lines start) and after the last whole line (`end`: where they stop).
// Rows of a gather into a line-aligned output skip both.
inline size_t copy_head(char* destination, const char* source, size_t bytes, size_t* end) {
  size_t head = (kLine - reinterpret_cast<uintptr_t>(destination) % kLine) % kLine;
  if (head > bytes) head = bytes;
  if (head != 0) std::memcpy(destination, source, head);
  *end = head + (bytes - head) / kLine * kLine;
  return head;
}

inline void copy_tail(char* destination, const char* source, size_t bytes, size_t end) {
  if (end != bytes) std::memcpy(destination + end, source + end, bytes - end);
}

// The copies differ only in the width of their stores; each line is written whole, so the
// write-combining buffers send full lines to memory.
__attribute__((target("avx2"))) void stream_avx2(char* destination, const char* source,
                                                 size_t bytes) {
  size_t end;
  size_t i = copy_head(destination, source, bytes, &end);
  for (; i < end; i += kLine) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + i));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(destination + i), low);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(destination + i + 32), high);
  }
  copy_tail(destination, source, bytes, end);
}

void stream_sse2(char* destination, const char* source, size_t bytes) {
  size_t end;
  size_t i = copy_head(destination, source, bytes, &end);
  for (; i < end; i += kLine) {
    for (size_t quarter = 0; quarter < kLine; quarter += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(destination + i + quarter),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + i + quarter)));
    }
  }
  copy_tail(destination, source, bytes, end);
}

}  // namespace

CopyFunction streaming_copy_of_width(int width) {
  __builtin_cpu_init();
  switch (width) {
    case 32:
      return __builtin_cpu_supports("avx2") ? &stream_avx2 : nullptr;
    case 16:
      return &stream_sse2;  // SSE2 is part of x86-64
    default:
      return nullptr;
  }
}

CopyFunction streaming_copy_function() {
  static const CopyFunction chosen = [] {
    CopyFunction copy = streaming_copy_of_width(32);
    return copy != nullptr ? copy : &stream_sse2;
  }();
  return chosen;
}

void streaming_stores_fence() {
  _mm_sfence();
}

#else  // no non-temporal stores known here: plain copies, which need no fence

namespace {
void plain_copy(char* destination, const char* source, size_t bytes) {
  std::memcpy(destination, source, bytes);
}
}  // namespace

CopyFunction streaming_copy_function() {
  return &plain_copy;
}

CopyFunction streaming_copy_of_width(int) {
  return nullptr;
}

void streaming_stores_fence() {}

#endif

}  // namespace memloom::ops
