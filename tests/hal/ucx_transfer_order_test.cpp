// Which ops of one transfer() call wait for the ones before it (hw/host/ucx_transfer_order.h).
#include <gtest/gtest.h>

#include <vector>

#include "hw/host/ucx_transfer_order.h"

namespace memloom {
namespace {

using hal::TransferOp;
using Direction = TransferOp::Direction;

std::byte local_memory[1 << 16];

TransferOp op(uint64_t remote, size_t local_offset, size_t bytes) {
  return {Direction::kWrite, remote, local_memory + local_offset, bytes};
}

// Adds `ops` in order; the indexes of those that had to wait.
std::vector<size_t> waits(const std::vector<TransferOp>& ops) {
  std::vector<const TransferOp*> work;
  for (const TransferOp& each : ops) work.push_back(&each);
  host::UcxTransferOrder order(work);
  std::vector<size_t> waited;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (order.must_wait(ops[i])) {
      waited.push_back(i);
      order.restart();
    }
    order.add(ops[i]);
  }
  return waited;
}

TEST(UcxTransferOrder, DisjointOpsInAnyOrderNeverWait) {
  std::vector<TransferOp> ops;
  for (size_t i = 0; i < 64; ++i) ops.push_back(op(0x10000 + (i * 37 % 64) * 256, i * 256, 256));
  EXPECT_TRUE(waits(ops).empty());
}

TEST(UcxTransferOrder, RangesThatOnlyTouchDoNotOverlap) {
  EXPECT_TRUE(waits({op(0x2000, 0, 100), op(0x1000, 200, 0x1000), op(0x2064, 100, 100)}).empty());
}

TEST(UcxTransferOrder, AnOpOverlappingAnEarlierOneInRemoteMemoryWaits) {
  // The overlap is between the first and the last op, far apart once sorted by call order only.
  EXPECT_EQ(waits({op(0x1000, 0, 0x1000), op(0x9000, 0x1000, 8), op(0x5000, 0x2000, 8),
                   op(0x1ff8, 0x3000, 16)}),
            std::vector<size_t>{3});
}

TEST(UcxTransferOrder, AnOpOverlappingAnEarlierOneInLocalMemoryWaits) {
  EXPECT_EQ(waits({op(0x1000, 0, 64), op(0x2000, 32, 64)}), std::vector<size_t>{1});
}

TEST(UcxTransferOrder, AfterARestartOnlyTheOpsSinceCount) {
  // Op 1 waits for op 0. Op 2 overlaps op 0 only, which completed before op 1 went: it goes on.
  EXPECT_EQ(waits({op(0x1000, 0, 64), op(0x1000, 64, 16), op(0x1020, 128, 8)}),
            std::vector<size_t>{1});
  // Here op 2 overlaps op 1 as well.
  EXPECT_EQ(waits({op(0x1000, 0, 64), op(0x1000, 64, 64), op(0x1020, 128, 8)}),
            (std::vector<size_t>{1, 2}));
}

}  // namespace
}  // namespace memloom
