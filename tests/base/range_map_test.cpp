// base::RangeMap and base::hex: the one copy of the overlap/containment arithmetic that the memory
// domains, the staged transport, BM and TRANS's region table share.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "src/base/hex.h"
#include "src/base/range_map.h"

namespace memloom::base {
namespace {

TEST(RangeMap, InsertsDisjointIntervalsAndRefusesOverlaps) {
  RangeMap<std::string> map;
  EXPECT_EQ(map.insert(100, 50, "a"), nullptr);
  EXPECT_EQ(map.insert(150, 10, "touching above"), nullptr);  // [150, 160) only touches [100, 150)
  EXPECT_EQ(map.insert(90, 10, "touching below"), nullptr);   // [90, 100)
  EXPECT_EQ(map.size(), 3u);

  const auto* clash = map.insert(149, 1, "inside a");
  ASSERT_NE(clash, nullptr);
  EXPECT_EQ(clash->payload, "a");
  EXPECT_EQ(map.size(), 3u);  // refused: the map stays as it was

  // Overlapping two intervals reports the lower one.
  clash = map.insert(95, 10, "over two");
  ASSERT_NE(clash, nullptr);
  EXPECT_TRUE(clash->is(90, 10));
  // Covering an interval entirely is an overlap too.
  clash = map.insert(0, 1000, "over all");
  ASSERT_NE(clash, nullptr);
  EXPECT_TRUE(clash->is(90, 10));
}

TEST(RangeMap, FindsTheIntervalHoldingAWholeRange) {
  RangeMap<int> map;
  ASSERT_EQ(map.insert(0x1000, 0x100, 1), nullptr);
  ASSERT_EQ(map.insert(0x1100, 0x100, 2), nullptr);

  ASSERT_NE(map.find_containing(0x1000, 0x100), nullptr);
  EXPECT_EQ(map.find_containing(0x1000, 0x100)->payload, 1);
  EXPECT_EQ(map.find_containing(0x10ff, 1)->payload, 1);
  EXPECT_EQ(map.find_containing(0x1100, 0)->payload, 2);
  // Straddling two adjacent intervals is not inside either.
  EXPECT_EQ(map.find_containing(0x10ff, 2), nullptr);
  // Before the first, past the end of the last.
  EXPECT_EQ(map.find_containing(0xfff, 1), nullptr);
  EXPECT_EQ(map.find_containing(0x11ff, 2), nullptr);
  // A length that would wrap past the end of the address space.
  EXPECT_EQ(map.find_containing(0x1000, UINT64_MAX), nullptr);
}

TEST(RangeMap, FindsAndErasesByStart) {
  RangeMap<> map;
  ASSERT_EQ(map.insert(10, 5), nullptr);
  EXPECT_NE(map.find(10), nullptr);
  EXPECT_EQ(map.find(11), nullptr);
  EXPECT_FALSE(map.erase(11));
  EXPECT_TRUE(map.erase(10));
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.insert(10, 5), nullptr);  // the space is free again
}

TEST(RangeMap, FreeFunctionsServeAPlainMapOfLengths) {
  std::map<uint64_t, uint64_t> lengths{{100, 10}, {200, 20}};
  EXPECT_EQ(first_overlap(lengths, 105, 100)->first, 100u);
  EXPECT_EQ(first_overlap(lengths, 110, 90), lengths.end());
  EXPECT_EQ(first_overlap(lengths, 110, 91)->first, 200u);
  EXPECT_EQ(find_containing(lengths, 205, 15)->first, 200u);
  EXPECT_EQ(find_containing(lengths, 205, 16), lengths.end());
}

TEST(Hex, WritesLowercaseWithPrefix) {
  EXPECT_EQ(hex(uint64_t{0x7f12abc000}), "0x7f12abc000");
  EXPECT_EQ(hex(uint64_t{0}), "0x0");
  EXPECT_EQ(hex(UINT64_MAX), "0xffffffffffffffff");
  EXPECT_EQ(hex(reinterpret_cast<const void*>(uintptr_t{0xdead0})), "0xdead0");
}

TEST(Hex, BytesRoundTripInOneSpelling) {
  const uint8_t bytes[] = {0x00, 0x0f, 0xa5, 0xff};
  EXPECT_EQ(hex_bytes(bytes, sizeof(bytes)), "000fa5ff");
  uint8_t back[4] = {};
  ASSERT_TRUE(parse_hex_bytes("000fa5ff", back, sizeof(back)));
  EXPECT_EQ(std::memcmp(back, bytes, sizeof(bytes)), 0);
  EXPECT_FALSE(parse_hex_bytes("000FA5FF", back, sizeof(back)));   // uppercase: another spelling
  EXPECT_FALSE(parse_hex_bytes("000fa5f", back, sizeof(back)));    // too short
  EXPECT_FALSE(parse_hex_bytes("000fa5ff0", back, sizeof(back)));  // too long
  EXPECT_FALSE(parse_hex_bytes("000fa5fg", back, sizeof(back)));   // not a digit
}

}  // namespace
}  // namespace memloom::base
