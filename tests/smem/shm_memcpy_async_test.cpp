// SHM put and get by the copy engine: rank 0 copies into and out of rank 1's symmetric slot with
// memloom_memcpy_async on a stream of its own, as a GPU program moves bulk data into a peer's
// slot; rank 1 sees the bytes after the control barrier, and rank 0 gets back what rank 1 wrote.
// Sizes below and above the emulated copy engine's two-thread threshold (4 MiB).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "memloom/stream.h"
#include "tests/smem/shm_test_util.h"

namespace memloom::testing {
namespace {

constexpr uint64_t kSymmetric = 32 * kMiB;  // a multiple of every backend's granularity
constexpr size_t kLarge = 12 * kMiB + 5;
constexpr size_t kSmall = 4096 + 7;
// Where in rank 1's slot each copy goes: rank 0's puts, then what rank 1 writes for the gets.
constexpr size_t kPutLarge = 3;
constexpr size_t kPutSmall = kPutLarge + kLarge;
constexpr size_t kGetLarge = 16 * kMiB + 1;
constexpr size_t kGetSmall = kGetLarge + kLarge;
static_assert(kGetSmall + kSmall <= kSymmetric);

// The round passed to pattern_buffer tells the copies apart.
enum Round { kRoundPutLarge = 1, kRoundPutSmall, kRoundGetLarge, kRoundGetSmall };

void put_then_get(const RankContext& ctx) {
  ASSERT_SMEM_OK(shm_init_rank(ctx));
  void* gva = nullptr;
  smem_shm_t shm = smem_shm_create(5, 2, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
  ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
  auto* peer_slot = static_cast<char*>(gva) + smem_shm_get_symmetric_size(shm);  // rank 1's
  DeviceIo io(ctx.device());

  memloom_stream_t stream = nullptr;
  if (ctx.rank == 0) {
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
    const auto large = pattern_buffer(0, kLarge, kRoundPutLarge);
    const auto small = pattern_buffer(0, kSmall, kRoundPutSmall);
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
              memloom_memcpy_async(peer_slot + kPutLarge, large.data(), kLarge, stream));
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
              memloom_memcpy_async(peer_slot + kPutSmall, small.data(), kSmall, stream));
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
  }
  ASSERT_SMEM_OK(smem_shm_control_barrier(shm));  // the puts are complete

  if (ctx.rank == 1) {
    std::vector<uint8_t> seen(kLarge);
    io.read(seen.data(), peer_slot + kPutLarge, kLarge);
    EXPECT_TRUE(seen == pattern_buffer(0, kLarge, kRoundPutLarge)) << "large put";
    seen.resize(kSmall);
    io.read(seen.data(), peer_slot + kPutSmall, kSmall);
    EXPECT_TRUE(seen == pattern_buffer(0, kSmall, kRoundPutSmall)) << "small put";
    const auto large = pattern_buffer(1, kLarge, kRoundGetLarge);
    const auto small = pattern_buffer(1, kSmall, kRoundGetSmall);
    io.write(peer_slot + kGetLarge, large.data(), kLarge);
    io.write(peer_slot + kGetSmall, small.data(), kSmall);
  }
  ASSERT_SMEM_OK(smem_shm_control_barrier(shm));  // rank 1's bytes are in its slot

  if (ctx.rank == 0) {
    std::vector<uint8_t> large(kLarge), small(kSmall);
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
              memloom_memcpy_async(large.data(), peer_slot + kGetLarge, kLarge, stream));
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS,
              memloom_memcpy_async(small.data(), peer_slot + kGetSmall, kSmall, stream));
    ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
    EXPECT_TRUE(large == pattern_buffer(1, kLarge, kRoundGetLarge)) << "large get";
    EXPECT_TRUE(small == pattern_buffer(1, kSmall, kRoundGetSmall)) << "small get";
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
  }
  ASSERT_SMEM_OK(smem_shm_control_barrier(shm));  // rank 1 keeps its slot until rank 0 is done
  ASSERT_SMEM_OK(smem_shm_destroy(shm, 0));
  smem_shm_uninit(0);
}

TEST(ShmMemcpyAsync, PutIntoAndGetFromAPeersSlot) {
  auto results = run_ranks(ranks_on_nodes(2), put_then_get);
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
