// Memory shared across processes as SHM, BM and WholeMemory use it: every rank contributes a
// segment (exported as a file descriptor, passed over the fd broker, imported by the others), all
// ranks map all segments into one range at a common base, and each rank reads and writes its
// peers' memory through that range with stream copies and kernels. On the CUDA backend: VMM
// handles shared as POSIX fds, peer GPUs reached over NVLink, several ranks per GPU too.
#include <cstring>
#include <vector>

#include "src/core/shared_segments.h"
#include "src/kernels/fill_kernel.h"
#include "tests/cuda/backend_test_helpers.h"

namespace memloom::backend_test {
namespace {

using hal::MemoryKind;

struct Case {
  int ranks;
  MemoryKind kind;
};

class SharedMemory : public ::testing::TestWithParam<Case> {};

void fill(hal::Stream& stream, void* destination, size_t bytes, uint64_t seed) {
  kernels::FillPatternArgs args{static_cast<uint8_t*>(destination), seed};
  stream.launch(hal::KernelLaunch{hal::KernelId::kFillPattern, &args, sizeof(args), bytes});
}

long pattern_mismatch(const std::vector<uint8_t>& bytes, uint64_t seed) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != kernels::fill_pattern_byte(seed, i)) return static_cast<long>(i);
  }
  return -1;
}

TEST_P(SharedMemory, EveryRankReachesEverySlotOfACommonRange) {
  const Case test = GetParam();
  auto results =
      testing::run_ranks(ranks_on_nodes(test.ranks, 1), [&](const testing::RankContext& context) {
        auto group = join(context, "shared");
        auto& platform = core::platform();
        auto& domain = platform.memory_domain();
        const int n = group->size(), me = group->rank();
        const size_t slot = 2 * domain.granularity(test.kind);
        const int device = platform.current_device();
        core::SegmentSet set = core::exchange_segments(*group, test.kind, device, slot, soon());
        auto range = core::reserve_common_range(*group, test.kind, slot * n, soon());
        for (int r = 0; r < n; ++r) {
          ASSERT_NE(set.segments[r], nullptr) << "segment of rank " << r;
          EXPECT_EQ(set.segments[r]->kind(), test.kind);
          range->map(slot * r, *set.segments[r]);
        }
        auto* base = static_cast<uint8_t*>(range->base());
        auto stream = platform.create_stream(device);
        std::vector<uint8_t> host(slot);
        domain.register_user_memory(host.data(), host.size());

        // Each rank fills its own slot, then reads every slot through the common range.
        fill(*stream, base + slot * me, slot, 10 + me);
        stream->synchronize(soon());
        group->collectives().barrier(soon());
        for (int r = 0; r < n; ++r) {
          stream->copy(host.data(), base + slot * r, slot);
          stream->synchronize(soon());
          EXPECT_EQ(pattern_mismatch(host, 10 + r), -1)
              << "slot of rank " << r << " read by " << me;
        }
        group->collectives().barrier(soon());

        // Each rank writes its right neighbour's slot with a kernel; the owner sees it in its
        // segment.
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        fill(*stream, base + slot * right, slot, 100 + me);
        stream->synchronize(soon());
        group->collectives().barrier(soon());
        void* own = domain.map_anywhere(*set.segments[me]);
        stream->copy(host.data(), own, slot);
        stream->synchronize(soon());
        EXPECT_EQ(pattern_mismatch(host, 100 + left), -1) << "rank " << me << "'s own slot";
        if (test.kind == MemoryKind::kHost) {
          // Host segments are ordinary memory in every process that maps them.
          EXPECT_EQ(std::memcmp(host.data(), base + slot * me, slot), 0);
        }
        domain.unmap_anywhere(own, slot);
        domain.unregister_user_memory(host.data());
        group->collectives().barrier(soon());
      });
  EXPECT_ALL_RANKS_PASS(results);
  EXPECT_TRUE(testing::leftover_shm_entries().empty());
}

INSTANTIATE_TEST_SUITE_P(Cases, SharedMemory,
                         ::testing::Values(Case{2, MemoryKind::kDevice},
                                           Case{4, MemoryKind::kDevice}, Case{2, MemoryKind::kHost},
                                           Case{3, MemoryKind::kHost}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "ranks_" +
                                  (info.param.kind == MemoryKind::kDevice ? "device" : "host");
                         });

// A device segment of another GPU is reachable through a mapping in this process (peer access).
TEST(SharedMemoryAcrossDevices, OneProcessMapsEveryDevice) {
  auto& platform = core::platform();
  auto& domain = platform.memory_domain();
  const size_t g = domain.granularity(MemoryKind::kDevice);
  const int devices = platform.device_count();
  auto range = domain.reserve(g * devices);
  std::vector<std::unique_ptr<hal::Segment>> segments;
  for (int d = 0; d < devices; ++d) {
    segments.push_back(domain.allocate(MemoryKind::kDevice, d, g));
    range->map(g * d, *segments.back());
  }
  // One stream, on the current device, writes and reads every device's memory.
  auto stream = platform.create_stream(platform.current_device());
  auto* base = static_cast<uint8_t*>(range->base());
  fill(*stream, base, g * devices, 77);
  std::vector<uint8_t> host(g * devices);
  domain.register_user_memory(host.data(), host.size());
  stream->copy(host.data(), base, host.size());
  stream->synchronize(soon());
  EXPECT_EQ(pattern_mismatch(host, 77), -1);
  domain.unregister_user_memory(host.data());
}

}  // namespace
}  // namespace memloom::backend_test
