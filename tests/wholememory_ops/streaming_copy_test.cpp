// The CPU backend's non-temporal row copy (src/ops/streaming_copy.h), every store width this
// machine has: every destination alignment within a line, a few source alignments, sizes around
// line multiples; the copied bytes must equal the source and no byte around them may change.
#include "src/ops/streaming_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace memloom::opstest {
namespace {

TEST(StreamingCopy, CopiesEveryAlignmentAndSizeExactly) {
  std::vector<std::pair<std::string, ops::CopyFunction>> copies = {
      {"default", ops::streaming_copy_function()}};
  for (const int width : {32, 16}) {
    if (auto copy = ops::streaming_copy_of_width(width)) {
      copies.emplace_back(std::to_string(width) + "-byte stores", copy);
    }
  }
  std::mt19937_64 rng(7);
  alignas(64) unsigned char source[2048];
  for (auto& byte : source) byte = static_cast<unsigned char>(rng());
  constexpr unsigned char kUntouched = 0xA5;
  for (const auto& [name, copy] : copies) {
    SCOPED_TRACE(name);
    for (size_t destination_offset = 0; destination_offset < 64; ++destination_offset) {
      for (const size_t source_offset : {0, 1, 8, 33}) {
        for (const size_t bytes : {0, 1, 15, 63, 64, 65, 127, 128, 200, 511, 512, 513, 1000}) {
          alignas(64) unsigned char destination[1200];
          std::fill(std::begin(destination), std::end(destination), kUntouched);
          copy(reinterpret_cast<char*>(destination) + destination_offset,
               reinterpret_cast<const char*>(source) + source_offset, bytes);
          ops::streaming_stores_fence();
          for (size_t i = 0; i < sizeof(destination); ++i) {
            const bool copied = i >= destination_offset && i < destination_offset + bytes;
            const unsigned char expected =
                copied ? source[source_offset + i - destination_offset] : kUntouched;
            ASSERT_EQ(expected, destination[i])
                << "byte " << i << " of a copy of " << bytes << " bytes to offset "
                << destination_offset << " from offset " << source_offset;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace memloom::opstest
