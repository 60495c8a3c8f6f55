#include "src/base/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace memloom::base {

#if defined(__x86_64__)

void streaming_copy(void* dst, const void* src, size_t bytes) {
  auto* to = static_cast<unsigned char*>(dst);
  const auto* from = static_cast<const unsigned char*>(src);
  // Up to the destination's next 16-byte boundary with an ordinary copy (streaming stores of
  // SSE2 need aligned addresses; the loads may be unaligned).
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(to) % 16) % 16);
  std::memcpy(to, from, head);
  to += head;
  from += head;
  bytes -= head;
  constexpr size_t kBlock = 64;  // one cache line per iteration
  for (; bytes >= kBlock; bytes -= kBlock, to += kBlock, from += kBlock) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(to), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 48), d);
  }
  _mm_sfence();  // non-temporal stores are weakly ordered: publish them before returning
  std::memcpy(to, from, bytes);
}

#else

void streaming_copy(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

#endif

}  // namespace memloom::base
