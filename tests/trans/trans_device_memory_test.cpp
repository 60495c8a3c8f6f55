// Registered memory may be device memory: here emulated device memory of the HAL's memory domain
// (the segments BM and SHM map), written and read over both data paths.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "smem/host/smem_trans.h"
#include "src/core/platform_loader.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

class TransDeviceMemory : public ::testing::TestWithParam<uint32_t> {};

TEST_P(TransDeviceMemory, DeviceSegmentsAreTransferTargets) {
  hal::Platform& platform = core::platform();
  if (platform.name() != "emulated")
    GTEST_SKIP() << "the CPU data paths reach device memory only when emulated";
  hal::MemoryDomain& domain = platform.memory_domain();
  const size_t size = domain.granularity(hal::MemoryKind::kDevice) * 2;
  auto segment = domain.allocate(hal::MemoryKind::kDevice, 0, size);
  auto* device = static_cast<uint8_t*>(domain.map_anywhere(*segment));

  TransEnvironment env;
  smem_trans_config_t config = make_config(SMEM_TRANS_BOTH, GetParam());
  const std::string receiver_id = free_unique_id();
  smem_trans_t receiver = smem_trans_create(env.store_url().c_str(), receiver_id.c_str(), &config);
  smem_trans_t sender =
      smem_trans_create(env.store_url().c_str(), free_unique_id().c_str(), &config);
  ASSERT_TRUE(receiver && sender) << smem_get_last_err_msg();
  ASSERT_EQ(smem_trans_register_mem(receiver, device, size, 0), SMEM_SUCCESS)
      << smem_get_last_err_msg();

  auto data = random_bytes(size, fresh_seed());
  ASSERT_EQ(smem_trans_write(sender, data.data(), receiver_id.c_str(), device, size, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(std::memcmp(device, data.data(), size), 0);
  fill_random(device, size, fresh_seed());
  std::vector<uint8_t> back(size);
  ASSERT_EQ(smem_trans_read(sender, back.data(), receiver_id.c_str(), device, size, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(std::memcmp(device, back.data(), size), 0);

  ASSERT_EQ(smem_trans_deregister_mem(receiver, device), SMEM_SUCCESS);
  smem_trans_destroy(sender, 0);
  smem_trans_destroy(receiver, 0);
  domain.unmap_anywhere(device, size);
}

INSTANTIATE_TEST_SUITE_P(Paths, TransDeviceMemory,
                         ::testing::Values(uint32_t{SMEMB_DATA_OP_SDMA},
                                           uint32_t{SMEMB_DATA_OP_HOST_TCP}),
                         [](const auto& info) {
                           return info.param == SMEMB_DATA_OP_SDMA ? "Direct" : "Tcp";
                         });

}  // namespace
}  // namespace memloom::trans_test
