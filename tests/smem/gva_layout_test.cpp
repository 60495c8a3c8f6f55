// The GVA stride rule and the batch merge rule, without processes or a backend.
#include <gtest/gtest.h>

#include "memloom/error.h"
#include "src/smem/bm/bm_copy_engine.h"
#include "src/smem/gva_layout.h"
#include "tests/support/status_of.h"

namespace memloom::smem {
namespace {

constexpr uintptr_t kBase = 0x200000000000ull;

void* at(uintptr_t address) {
  return reinterpret_cast<void*>(address);
}

using ::memloom::testing::status_of;

TEST(GvaLayout, SlotsAndRanksFollowOneStride) {
  GvaLayout layout("device", kBase, 4096, {4096, 4096, 1024});
  EXPECT_EQ(layout.size(), 3 * 4096u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(layout.slot(r), at(kBase + r * 4096));
    EXPECT_EQ(layout.rank_of(layout.slot(r)), r);
    EXPECT_EQ(layout.rank_of(static_cast<char*>(layout.slot(r)) + 4095), r);
  }
  EXPECT_EQ(layout.rank_of(at(kBase - 1)), -1);
  EXPECT_EQ(layout.rank_of(at(kBase + 3 * 4096)), -1);
  EXPECT_EQ(status_of([&] { layout.slot(3); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { layout.slot(-1); }), Status::kInvalidInput);
}

TEST(GvaLayout, LocateRefusesRangesThatCrossSlotsOrLeaveTheRange) {
  GvaLayout layout("host", kBase, 4096, {4096, 4096, 1024});
  GvaSpan span = layout.locate(at(kBase + 4096 + 100), 200, "dest");
  EXPECT_EQ(span.rank, 1);
  EXPECT_EQ(span.offset, 100u);
  EXPECT_EQ(layout.locate(at(kBase + 4096 - 8), 8, "dest").rank, 0);  // exactly to the end
  EXPECT_EQ(status_of([&] { layout.locate(at(kBase + 4096 - 8), 9, "dest"); }),
            Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { layout.locate(at(kBase - 8), 16, "dest"); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { layout.locate(at(kBase + 3 * 4096), 1, "dest"); }),
            Status::kInvalidInput);
  // Rank 2 backs only 1024 bytes of its slot.
  EXPECT_EQ(layout.locate(at(kBase + 2 * 4096), 1024, "src").rank, 2);
  EXPECT_EQ(status_of([&] { layout.locate(at(kBase + 2 * 4096 + 1000), 25, "src"); }),
            Status::kInvalidInput);
  try {
    layout.locate(at(kBase + 4096 - 8), 9, "the destination");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("the destination"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("crosses the end of rank 0's slot"),
              std::string::npos);
  }
}

TEST(GvaLayout, OverlapAndEmptyRanges) {
  GvaLayout layout("device", kBase, 4096, {4096, 4096});
  EXPECT_TRUE(layout.overlaps(at(kBase - 10), 11));
  EXPECT_FALSE(layout.overlaps(at(kBase - 10), 10));
  EXPECT_TRUE(layout.overlaps(at(kBase + 8191), 100));
  EXPECT_FALSE(layout.overlaps(at(kBase + 8192), 100));
  GvaLayout empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.rank_of(at(kBase)), -1);
  EXPECT_FALSE(empty.overlaps(at(kBase), 1 << 20));
  EXPECT_EQ(status_of([] { GvaLayout("bad", kBase, 4096, {8192}); }), Status::kLogic);
}

CopySide user(uintptr_t address) {
  return CopySide{address, CopySide::Space::kUser, -1, false};
}
CopySide device(uintptr_t address, int rank, bool remote = false) {
  return CopySide{address, CopySide::Space::kDevice, rank, remote};
}

TEST(BatchMerge, ContiguousOnBothSidesWithinOneSlotMerges) {
  std::vector<ResolvedCopy> copies = {
      {user(0x1000), device(kBase, 1), 100},
      {user(0x1064), device(kBase + 100, 1), 50},       // continues both sides: merged
      {user(0x1096), device(kBase + 200, 1), 50},       // destination gap: new entry
      {user(0x10c8), device(kBase + 250, 2), 50},       // another rank: new entry
      {user(0x10fa), device(kBase + 300, 2, true), 8},  // remote flag differs: new entry
  };
  auto merged = merge_contiguous(copies);
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged[0].bytes, 150u);
  EXPECT_EQ(merged[1].dst.address, kBase + 200);
  EXPECT_EQ(merged[2].dst.rank, 2);
  EXPECT_TRUE(merged[3].dst.remote);
}

TEST(BatchMerge, DifferentSpacesNeverMerge) {
  CopySide host{kBase + 100, CopySide::Space::kHost, 1, false};
  std::vector<ResolvedCopy> copies = {{user(0x1000), device(kBase, 1), 100},
                                      {user(0x1064), host, 100}};
  EXPECT_EQ(merge_contiguous(copies).size(), 2u);
  EXPECT_TRUE(merge_contiguous({}).empty());
}

}  // namespace
}  // namespace memloom::smem
