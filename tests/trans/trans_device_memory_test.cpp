// Registered memory may be device memory: segments of the HAL's memory domain (what BM and SHM
// map), written and read over every data path. The test reaches the device memory itself only
// through stream copies, so it runs unchanged on the emulated and on the CUDA backend (where
// same-node peers copy device memory with streams through CUDA exports of it: in one process
// directly, between processes through an imported VMM mapping; other paths go through host
// buffers).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "smem/host/smem_trans.h"
#include "src/core/platform_loader.h"
#include "tests/support/multi_process.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

class TransDeviceMemory : public ::testing::TestWithParam<PathMode> {
 protected:
  void TearDown() override { use_path(PathMode::kDirect); }
};

TEST_P(TransDeviceMemory, DeviceSegmentsAreTransferTargets) {
  hal::Platform& platform = core::platform();
  hal::MemoryDomain& domain = platform.memory_domain();
  const size_t size = domain.granularity(hal::MemoryKind::kDevice) * 2;
  auto segment = domain.allocate(hal::MemoryKind::kDevice, 0, size);
  void* device = domain.map_anywhere(*segment);
  auto stream = platform.create_stream(0);
  const Deadline soon = Deadline::after(std::chrono::seconds(20));

  TransEnvironment env;
  use_path(GetParam());
  smem_trans_config_t config = make_config(SMEM_TRANS_BOTH, data_ops_for(GetParam()));
  const std::string receiver_id = free_unique_id();
  smem_trans_t receiver = smem_trans_create(env.store_url().c_str(), receiver_id.c_str(), &config);
  smem_trans_t sender =
      smem_trans_create(env.store_url().c_str(), free_unique_id().c_str(), &config);
  ASSERT_TRUE(receiver && sender) << smem_get_last_err_msg();
  ASSERT_EQ(smem_trans_register_mem(receiver, device, size, 0), SMEM_SUCCESS)
      << smem_get_last_err_msg();

  // A write lands in device memory.
  auto data = random_bytes(size, fresh_seed());
  ASSERT_EQ(smem_trans_write(sender, data.data(), receiver_id.c_str(), device, size, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  std::vector<uint8_t> seen(size);
  stream->copy(seen.data(), device, size);
  stream->synchronize(soon);
  EXPECT_EQ(seen, data);

  // A read returns what device memory holds.
  auto other = random_bytes(size, fresh_seed());
  stream->copy(device, other.data(), size);
  stream->synchronize(soon);
  std::vector<uint8_t> back(size);
  ASSERT_EQ(smem_trans_read(sender, back.data(), receiver_id.c_str(), device, size, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(back, other);

  ASSERT_EQ(smem_trans_deregister_mem(receiver, device), SMEM_SUCCESS);
  smem_trans_destroy(sender, 0);
  smem_trans_destroy(receiver, 0);
  domain.unmap_anywhere(device, size);
}

INSTANTIATE_TEST_SUITE_P(Paths, TransDeviceMemory,
                         ::testing::Values(PathMode::kDirect, PathMode::kTcp, PathMode::kStaged),
                         [](const auto& info) { return path_name(info.param); });

// Two processes of one node, each serving a device segment on its own device: each writes into and
// reads from the other's. On CUDA this is the imported-VMM device path (peer-to-peer copies).
void exchange_rank(const testing::RankContext& context, uint64_t seed) {
  hal::Platform& platform = core::platform();
  const int device = context.device();
  hal::MemoryDomain& domain = platform.memory_domain();
  const size_t size = domain.granularity(hal::MemoryKind::kDevice) * 4;
  auto segment = domain.allocate(hal::MemoryKind::kDevice, device, size);
  void* memory = domain.map_anywhere(*segment);
  auto stream = platform.create_stream(device);
  const Deadline soon = Deadline::after(std::chrono::seconds(20));
  auto mine = random_bytes(size / 2, seed + context.rank);  // what the other rank reads
  stream->copy(static_cast<char*>(memory) + size / 2, mine.data(), size / 2);
  stream->synchronize(soon);

  auto client = store::Client::connect(context.store_url);
  smem_trans_config_t config = make_config(SMEM_TRANS_BOTH);
  config.deviceId = static_cast<uint32_t>(device);
  ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
  const std::string id = free_unique_id();
  smem_trans_t handle = smem_trans_create(context.store_url.c_str(), id.c_str(), &config);
  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
  ASSERT_EQ(smem_trans_register_mem(handle, memory, size, 0), SMEM_SUCCESS)
      << smem_get_last_err_msg();
  publish(*client, "rank/" + std::to_string(context.rank),
          id + " " + std::to_string(reinterpret_cast<uintptr_t>(memory)));
  const int other = 1 - context.rank;
  std::string record = await(*client, "rank/" + std::to_string(other));
  const std::string other_id = record.substr(0, record.find(' '));
  auto* other_memory = reinterpret_cast<char*>(
      static_cast<uintptr_t>(std::stoull(record.substr(record.find(' ') + 1))));

  auto data = random_bytes(size / 2, seed + 100 + context.rank);
  for (int round = 0; round < 2; ++round) {  // the second round reuses the import
    ASSERT_EQ(smem_trans_write(handle, data.data(), other_id.c_str(), other_memory, size / 2, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    std::vector<uint8_t> seen(size / 2);
    ASSERT_EQ(smem_trans_read(handle, seen.data(), other_id.c_str(), other_memory + size / 2,
                              size / 2, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    EXPECT_EQ(seen, random_bytes(size / 2, seed + other));
  }
  store_barrier(*client, "exchanged", 2);
  std::vector<uint8_t> received(size / 2);
  stream->copy(received.data(), memory, size / 2);
  stream->synchronize(soon);
  EXPECT_EQ(received, random_bytes(size / 2, seed + 100 + other));
  store_barrier(*client, "checked", 2);
  ASSERT_EQ(smem_trans_deregister_mem(handle, memory), SMEM_SUCCESS);
  smem_trans_destroy(handle, 0);
  smem_trans_uninit(0);
  domain.unmap_anywhere(memory, size);
}

TEST(TransDeviceMemoryTwoProcesses, EachWritesAndReadsTheOthersDeviceSegment) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = std::chrono::seconds(60);
  const uint64_t seed = fresh_seed();
  auto results = testing::run_ranks(
      options, [&](const testing::RankContext& context) { exchange_rank(context, seed); });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::trans_test
