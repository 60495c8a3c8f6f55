// How the CUDA backend cuts copies at the edges of page-locked registrations
// (hw/cuda/host_registrations.h). The table never touches the memory it records, so made-up
// addresses serve and no GPU is needed; a GPU run of MemoryDomain.CopiesCrossTheSeams... checks
// that CUDA takes the pieces.
#include "hw/cuda/host_registrations.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace memloom::cuda {
namespace {

constexpr uintptr_t kPage = 2 << 20;
// Far from anything this process maps; the table is process-wide, so each test unregisters.
constexpr uintptr_t kBase = uintptr_t{0x6ff000000000};

void* at(uintptr_t offset) {
  return reinterpret_cast<void*>(kBase + offset);
}

// (destination offset, source offset, bytes) of each piece a copy is cut into.
using Pieces = std::vector<std::tuple<uintptr_t, uintptr_t, size_t>>;

Pieces pieces_of(uintptr_t to, uintptr_t from, size_t bytes) {
  Pieces pieces;
  copy_within_registrations(at(to), at(from), bytes, [&](void* d, const void* s, size_t n) {
    pieces.emplace_back(reinterpret_cast<uintptr_t>(d) - kBase,
                        reinterpret_cast<uintptr_t>(s) - kBase, n);
  });
  return pieces;
}

// Three registrations side by side at [0, 3 pages), as a contiguous WholeMemory host range has.
class HostRegistrations : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uintptr_t i = 0; i < 3; ++i) note_host_registered(at(i * kPage), kPage);
  }
  void TearDown() override {
    for (uintptr_t i = 0; i < 3; ++i) note_host_unregistered(at(i * kPage));
  }
};

TEST_F(HostRegistrations, ACopyWithinOneRegistrationStaysWhole) {
  EXPECT_EQ(pieces_of(kPage + 8, 100 * kPage, kPage - 8),
            (Pieces{{kPage + 8, 100 * kPage, kPage - 8}}));
}

TEST_F(HostRegistrations, ACopyAcrossTheSeamsIsCutAtEach) {
  // From the middle of the first registration to the middle of the third; the other side is not
  // registered.
  const uintptr_t from = 100 * kPage;
  EXPECT_EQ(pieces_of(kPage / 2, from, 2 * kPage),
            (Pieces{{kPage / 2, from, kPage / 2},
                    {kPage, from + kPage / 2, kPage},
                    {2 * kPage, from + 3 * kPage / 2, kPage / 2}}));
  // The same with the seams on the source side.
  EXPECT_EQ(pieces_of(from, kPage / 2, 2 * kPage),
            (Pieces{{from, kPage / 2, kPage / 2},
                    {from + kPage / 2, kPage, kPage},
                    {from + 3 * kPage / 2, 2 * kPage, kPage / 2}}));
}

TEST_F(HostRegistrations, EdgesOfBothSidesCutTheCopy) {
  // The destination's seams at 1 and 2 pages; the source's, shifted by a quarter page, at 1 page.
  EXPECT_EQ(pieces_of(3 * kPage / 4, kPage / 2, kPage),
            (Pieces{{3 * kPage / 4, kPage / 2, kPage / 4},
                    {kPage, 3 * kPage / 4, kPage / 4},
                    {5 * kPage / 4, kPage, kPage / 2}}));
}

TEST_F(HostRegistrations, UnregisteredMemoryIsCutWhereARegistrationBegins) {
  // From below the first registration into it, and past the last one out of it.
  note_host_unregistered(at(0));
  EXPECT_EQ(pieces_of(kPage - 64, 100 * kPage, 128),
            (Pieces{{kPage - 64, 100 * kPage, 64}, {kPage, 100 * kPage + 64, 64}}));
  EXPECT_EQ(pieces_of(3 * kPage - 64, 100 * kPage, 128),
            (Pieces{{3 * kPage - 64, 100 * kPage, 64}, {3 * kPage, 100 * kPage + 64, 64}}));
  note_host_registered(at(0), kPage);
}

TEST_F(HostRegistrations, AnUnregisteredRangeIsForgotten) {
  note_host_unregistered(at(kPage));
  EXPECT_EQ(pieces_of(kPage + 8, 100 * kPage, 2 * kPage),
            (Pieces{{kPage + 8, 100 * kPage, kPage - 8},
                    {2 * kPage, 101 * kPage - 8, kPage},
                    {3 * kPage, 102 * kPage - 8, 8}}));
  note_host_registered(at(kPage), kPage);
}

}  // namespace
}  // namespace memloom::cuda
