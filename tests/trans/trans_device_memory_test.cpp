// Registered memory may be device memory: segments of the HAL's memory domain (what BM and SHM
// map), written and read over every data path. The test reaches the device memory itself only
// through stream copies, so it runs unchanged on the emulated and on the CUDA backend (where every
// path goes through host buffers).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "smem/host/smem_trans.h"
#include "src/core/platform_loader.h"
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

}  // namespace
}  // namespace memloom::trans_test
