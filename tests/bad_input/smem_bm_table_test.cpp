// Bad input of every function of smem_bm.h: before init, on live objects, with wrong and destroyed
// handles, and after uninit.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "smem/host/smem_bm.h"
#include "tests/bad_input/bad_input_table.h"

namespace memloom::bad_input {
namespace {

constexpr uint64_t kSlot = 2ull << 20;
constexpr auto kTcpAndSdma =
    static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP);

smem_bm_config_t quick_config(uint16_t rank = 0) {
  smem_bm_config_t config;
  smem_bm_config_init(&config);
  config.initTimeout = 10;
  config.createTimeout = 10;
  config.controlOperationTimeout = 10;
  config.rankId = rank;
  config.autoRanking = false;
  return config;  // startConfigStoreServer: rank 0 (this process) serves the store
}

// Host memory aligned as smem_bm_register_user_mem wants it.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes) : size(bytes) {
    data = static_cast<char*>(::aligned_alloc(SMEM_BM_USER_MEM_ALIGNMENT, bytes));
  }
  ~AlignedBuffer() { ::free(data); }
  uint64_t address(size_t offset = 0) const { return reinterpret_cast<uintptr_t>(data + offset); }
  char* data;
  size_t size;
};

TEST(BadInputTable, SmemBm) {
  const MessageSource messages = smem_messages();
  const std::string url = free_store_url();
  int not_an_object = 0;
  smem_bm_t fake = &not_an_object;
  const smem_bm_config_t config = quick_config();
  auto init_with = [&](auto change, uint32_t world = 1) {
    smem_bm_config_t changed = quick_config();
    change(changed);
    return smem_bm_init(url.c_str(), world, 0, &changed);
  };

  std::vector<Row> before_init = {
      {"smem_bm_config_init", "null config", [] { return smem_bm_config_init(nullptr); },
       SMEM_INVALID_PARAM, "config is null"},
      {"smem_bm_init", "null URL", [&] { return smem_bm_init(nullptr, 1, 0, &config); },
       SMEM_INVALID_PARAM, "storeURL is null"},
      {"smem_bm_init", "worldSize 0", [&] { return smem_bm_init(url.c_str(), 0, 0, &config); },
       SMEM_INVALID_PARAM, "worldSize 0 is out of range [1, 1024]"},
      {"smem_bm_init", "worldSize too large",
       [&] { return smem_bm_init(url.c_str(), 1025, 0, &config); }, SMEM_INVALID_PARAM,
       "worldSize 1025 is out of range"},
      {"smem_bm_init", "rankId out of range",
       [&] { return init_with([](auto& c) { c.rankId = 2; }, 2); }, SMEM_INVALID_PARAM,
       "rankId 2 is out of range [0, 2)"},
      {"smem_bm_init", "initTimeout 0",
       [&] { return init_with([](auto& c) { c.initTimeout = 0; }); }, SMEM_INVALID_PARAM,
       "must be >= 1 second"},
      {"smem_bm_init", "controlOperationTimeout 0",
       [&] { return init_with([](auto& c) { c.controlOperationTimeout = 0; }); },
       SMEM_INVALID_PARAM, "must be >= 1 second"},
      {"smem_bm_init", "hcomUrl not terminated",
       [&] { return init_with([](auto& c) { std::memset(c.hcomUrl, 'x', sizeof(c.hcomUrl)); }); },
       SMEM_INVALID_PARAM, "hcomUrl is not NUL-terminated within its 64 bytes"},
      {"smem_bm_init", "store TLS without a CA file",
       [&] { return init_with([](auto& c) { c.storeTlsConfig.tlsEnable = true; }); },
       SMEM_INVALID_PARAM, "storeTlsConfig.caPath (the CA file) is required"},
      {"smem_bm_init", "deviceId out of range",
       [&] { return smem_bm_init(url.c_str(), 1, 9999, &config); }, SMEM_INVALID_PARAM,
       "deviceId 9999 is out of range"},
      {"smem_bm_create", "before init",
       [] {
         return failure_value(smem_bm_create(0, 1, kTcpAndSdma, 0, kSlot, 0), smem_bm_t{nullptr});
       },
       kFailureValue, "smem_bm_init has not been called"},
      {"smem_bm_create2", "null option",
       [] { return failure_value(smem_bm_create2(0, nullptr), smem_bm_t{nullptr}); }, kFailureValue,
       "option is null"},
      {"smem_bm_get_rank_id", "before init",
       [] { return failure_value(smem_bm_get_rank_id(), UINT32_MAX); }, kFailureValue,
       "smem_bm_init has not been called"},
      {"smem_bm_wait", "before init", [&] { return smem_bm_wait(fake); }, SMEM_NOT_INITIALIZED,
       "smem_bm_init has not been called"},
      {"smem_bm_uninit", "before init", [] { return no_code([] { smem_bm_uninit(0); }); }, kNoCode,
       "smem_bm_init has not been called"},
      {"smem_bm_init", "unifiedAddressSpace false",
       [&] { return init_with([](auto& c) { c.unifiedAddressSpace = false; }); },
       SMEM_INVALID_PARAM, "unifiedAddressSpace must be true"},
      // MemFabric's order of checks: init is checked before the batch, after the pointers.
      {"smem_bm_copy_batch", "wrong handle, batchSize 0, before init",
       [&] {
         smem_batch_copy_params zero{nullptr, nullptr, nullptr, 0};
         return smem_bm_copy_batch(fake, &zero, SMEMB_COPY_H2G, 0);
       },
       SMEM_NOT_INITIALIZED, "smem_bm_init has not been called"},
      {"smem_bm_register_user_mem", "wrong handle, address 0, before init",
       [&] { return smem_bm_register_user_mem(fake, 0, 4096); }, SMEM_INVALID_PARAM, "addr is 0"},
      {"smem_bm_get_rank_id_by_gva", "before init",
       [&] {
         return failure_value(smem_bm_get_rank_id_by_gva(fake, &not_an_object),
                              static_cast<uint32_t>(SMEM_NOT_INITIALIZED));
       },
       kFailureValue, "smem_bm_init has not been called"},
  };
  int count = run_rows(before_init, messages);

  ASSERT_EQ(smem_bm_init(url.c_str(), 1, 0, &config), SMEM_SUCCESS) << smem_get_last_err_msg();
  smem_bm_t bm = smem_bm_create(0, 1, kTcpAndSdma, kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  ASSERT_EQ(smem_bm_join(bm, 0, nullptr), SMEM_SUCCESS);
  smem_bm_t destroyed = smem_bm_create(1, 1, kTcpAndSdma, 0, kSlot, 0);
  ASSERT_NE(destroyed, nullptr);
  smem_bm_destroy(destroyed);
  smem_bm_t unjoined = smem_bm_create(2, 1, kTcpAndSdma, 0, kSlot, 0);
  ASSERT_NE(unjoined, nullptr);
  smem_bm_t device_only = smem_bm_create(3, 1, kTcpAndSdma, 0, kSlot, 0);
  ASSERT_NE(device_only, nullptr);
  ASSERT_EQ(smem_bm_join(device_only, 0, nullptr), SMEM_SUCCESS);
  char* slot = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, 0));
  ASSERT_NE(slot, nullptr);
  AlignedBuffer user(64 * 1024), registered(64 * 1024);
  ASSERT_EQ(smem_bm_register_user_mem(bm, registered.address(), registered.size), SMEM_SUCCESS)
      << smem_get_last_err_msg();
  std::vector<char> buffer(4096);
  auto copy = [&](smem_bm_t handle, const void* src, void* dst, size_t bytes, int type) {
    smem_copy_params params{src, dst, bytes};
    return smem_bm_copy(handle, &params, static_cast<smem_bm_copy_type>(type), 0);
  };
  auto create = [&](uint32_t id, uint32_t members, uint32_t ops, uint64_t dram, uint64_t hbm) {
    return failure_value(
        smem_bm_create(id, members, static_cast<smem_bm_data_op_type>(ops), dram, hbm, 0),
        smem_bm_t{nullptr});
  };
  auto create2 = [&](auto change) {
    smem_bm_create_option_t option{};
    option.localHBMSize = kSlot;
    option.dataOpType = kTcpAndSdma;
    option.dramShmFd = -1;
    change(option);
    return failure_value(smem_bm_create2(9, &option), smem_bm_t{nullptr});
  };
  void* sources[2] = {buffer.data(), buffer.data()};
  void* destinations[2] = {slot, slot + kSlot};  // entry 1 starts past the slot
  const uint64_t sizes[2] = {16, 16};
  smem_batch_copy_params batch{sources, destinations, sizes, 2};
  smem_batch_copy_params empty_batch{sources, destinations, sizes, 0};
  smem_batch_copy_params null_batch{nullptr, destinations, sizes, 2};
  int on_stack = 0;

  std::vector<Row> live = {
      {"smem_bm_create", "dataOpType 0", [&] { return create(5, 1, 0, 0, kSlot); }, kFailureValue,
       "dataOpType 0 is not a set of smem_bm_data_op_type values"},
      {"smem_bm_create", "dataOpType unknown bit", [&] { return create(5, 1, 1u << 9, 0, kSlot); },
       kFailureValue, "dataOpType 512"},
      {"smem_bm_create", "no memory", [&] { return create(5, 1, kTcpAndSdma, 0, 0); },
       kFailureValue, "the rank contributes no memory"},
      {"smem_bm_create", "localHBMSize misaligned",
       [&] { return create(5, 1, kTcpAndSdma, 0, kSlot + 1); }, kFailureValue,
       "are not multiples of " + backend_granularity_phrase()},
      {"smem_bm_create", "localHBMSize above the maximum",
       [&] { return create(5, 1, kTcpAndSdma, 0, (64ull << 30) + kSlot); }, kFailureValue,
       "exceeds the maximum"},
      {"smem_bm_create", "localHBMSize larger than the device",
       [&] { return create(5, 1, kTcpAndSdma, 0, 32ull << 30); }, kFailureValue, "32"},
      {"smem_bm_create", "id in use", [&] { return create(0, 1, kTcpAndSdma, 0, kSlot); },
       kFailureValue, "BM object id 0 is in use"},
      {"smem_bm_create2", "tag not terminated",
       [&] { return create2([](auto& o) { std::memset(o.tag, 'x', sizeof(o.tag)); }); },
       kFailureValue, "tag is not NUL-terminated within its 32 bytes"},
      {"smem_bm_create2", "tagOpInfo not terminated",
       [&] { return create2([](auto& o) { std::memset(o.tagOpInfo, 'x', sizeof(o.tagOpInfo)); }); },
       kFailureValue, "tagOpInfo is not NUL-terminated"},
      {"smem_bm_create2", "dramShmFd given",
       [&] { return create2([](auto& o) { o.dramShmFd = 5; }); }, kFailureValue,
       "dramShmFd must be -1"},
      {"smem_bm_create2", "local size above the stride",
       [&] { return create2([](auto& o) { o.maxHbmSize = kSlot / 2; }); }, kFailureValue,
       "exceeds its slot size"},
      {"smem_bm_destroy", "null handle", [] { return no_code([] { smem_bm_destroy(nullptr); }); },
       kNoCode, "the BM handle is null"},
      {"smem_bm_destroy", "wrong handle", [&] { return no_code([&] { smem_bm_destroy(fake); }); },
       kNoCode, "is not a live BM object"},
      {"smem_bm_destroy", "destroyed handle",
       [&] { return no_code([&] { smem_bm_destroy(destroyed); }); }, kNoCode, "already destroyed"},
      {"smem_bm_join", "null handle", [] { return smem_bm_join(nullptr, 0, nullptr); },
       SMEM_INVALID_PARAM, "the BM handle is null"},
      {"smem_bm_join", "destroyed handle", [&] { return smem_bm_join(destroyed, 0, nullptr); },
       SMEM_INVALID_PARAM, "already destroyed"},
      {"smem_bm_join", "joined twice", [&] { return smem_bm_join(bm, 0, nullptr); },
       SMEM_REPEAT_CALL, "this rank has already joined BM object 0"},
      {"smem_bm_leave", "not joined", [&] { return smem_bm_leave(unjoined, 0); },
       SMEM_INVALID_PARAM, "this rank has not joined BM object 2"},
      {"smem_bm_leave", "wrong handle", [&] { return smem_bm_leave(fake, 0); }, SMEM_INVALID_PARAM,
       "is not a live BM object"},
      {"smem_bm_copy", "null params", [&] { return smem_bm_copy(bm, nullptr, SMEMB_COPY_H2G, 0); },
       SMEM_INVALID_PARAM, "params is null"},
      {"smem_bm_copy", "null source", [&] { return copy(bm, nullptr, slot, 16, SMEMB_COPY_H2G); },
       SMEM_INVALID_PARAM, "a source or destination is null"},
      {"smem_bm_copy", "dataSize 0",
       [&] { return copy(bm, buffer.data(), slot, 0, SMEMB_COPY_H2G); }, SMEM_INVALID_PARAM,
       "dataSize is 0"},
      {"smem_bm_copy", "copy type out of range",
       [&] { return copy(bm, buffer.data(), slot, 16, 10); }, SMEM_INVALID_PARAM,
       "copy type 10 is not a smem_bm_copy_type"},
      {"smem_bm_copy", "negative copy type", [&] { return copy(bm, buffer.data(), slot, 16, -1); },
       SMEM_INVALID_PARAM, "copy type -1"},
      {"smem_bm_copy", "crossing the slot's end",
       [&] { return copy(bm, buffer.data(), slot + kSlot - 8, 16, SMEMB_COPY_H2G); },
       SMEM_INVALID_PARAM, "crosses the end of rank 0's slot"},
      {"smem_bm_copy", "destination outside the GVA",
       [&] { return copy(bm, buffer.data(), buffer.data() + 64, 16, SMEMB_COPY_L2G); },
       SMEM_INVALID_PARAM, "outside the device range"},
      {"smem_bm_copy", "local side inside the GVA",
       [&] { return copy(bm, slot, slot + 64, 16, SMEMB_COPY_L2G); }, SMEM_INVALID_PARAM,
       "overlaps the device range"},
      {"smem_bm_copy", "no host range",
       [&] {
         char* device = static_cast<char*>(smem_bm_ptr(device_only, 0));
         return copy(device_only, buffer.data(), device, 16, SMEMB_COPY_H2GH);
       },
       SMEM_INVALID_PARAM, "has no host range"},
      {"smem_bm_copy", "not joined",
       [&] {
         char* device = static_cast<char*>(smem_bm_ptr(unjoined, 0));
         return copy(unjoined, buffer.data(), device, 16, SMEMB_COPY_H2G);
       },
       SMEM_INVALID_PARAM, "call smem_bm_join before copying"},
      {"smem_bm_copy", "wrong handle", [&] { return copy(fake, buffer.data(), slot, 16, 3); },
       SMEM_INVALID_PARAM, "is not a live BM object"},
      {"smem_bm_copy_batch", "wrong handle, batchSize 0",
       [&] { return smem_bm_copy_batch(fake, &empty_batch, SMEMB_COPY_H2G, 0); },
       SMEM_INVALID_PARAM, "is not a live BM object"},
      {"smem_bm_copy_batch", "null params",
       [&] { return smem_bm_copy_batch(bm, nullptr, SMEMB_COPY_H2G, 0); }, SMEM_INVALID_PARAM,
       "params is null"},
      {"smem_bm_copy_batch", "batchSize 0",
       [&] { return smem_bm_copy_batch(bm, &empty_batch, SMEMB_COPY_H2G, 0); }, SMEM_INVALID_PARAM,
       "batchSize is 0"},
      {"smem_bm_copy_batch", "null array",
       [&] { return smem_bm_copy_batch(bm, &null_batch, SMEMB_COPY_H2G, 0); }, SMEM_INVALID_PARAM,
       "sources, destinations or dataSizes is null"},
      {"smem_bm_copy_batch", "one bad entry",
       [&] { return smem_bm_copy_batch(bm, &batch, SMEMB_COPY_H2G, 0); }, SMEM_INVALID_PARAM,
       "batch entry 1"},
      {"smem_bm_wait", "null handle", [] { return smem_bm_wait(nullptr); }, SMEM_INVALID_PARAM,
       "the BM handle is null"},
      {"smem_bm_wait", "destroyed handle", [&] { return smem_bm_wait(destroyed); },
       SMEM_INVALID_PARAM, "already destroyed"},
      {"smem_bm_get_local_mem_size_by_mem_type", "memType out of range",
       [&] {
         return failure_value(
             smem_bm_get_local_mem_size_by_mem_type(bm, static_cast<smem_bm_mem_type>(9)),
             uint64_t{0});
       },
       kFailureValue, "memType 9 is not a smem_bm_mem_type"},
      {"smem_bm_get_local_mem_size", "null handle",
       [] { return failure_value(smem_bm_get_local_mem_size(nullptr), uint64_t{0}); },
       kFailureValue, "the BM handle is null", "smem_bm_get_local_mem_size_by_mem_type"},
      {"smem_bm_ptr_by_mem_type", "memType out of range",
       [&] {
         return failure_value(smem_bm_ptr_by_mem_type(bm, static_cast<smem_bm_mem_type>(9), 0),
                              static_cast<void*>(nullptr));
       },
       kFailureValue, "memType 9 is not a smem_bm_mem_type"},
      {"smem_bm_ptr_by_mem_type", "LOCAL_* with another rank",
       [&] {
         return failure_value(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_LOCAL_DEVICE, 1),
                              static_cast<void*>(nullptr));
       },
       kFailureValue, "SMEM_MEM_TYPE_LOCAL_* names this rank's own memory: pass rank 0, not 1"},
      {"smem_bm_ptr_by_mem_type", "peer rank out of range",
       [&] {
         return failure_value(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, 5),
                              static_cast<void*>(nullptr));
       },
       kFailureValue, "5"},
      {"smem_bm_ptr", "wrong handle",
       [&] { return failure_value(smem_bm_ptr(fake, 0), static_cast<void*>(nullptr)); },
       kFailureValue, "is not a live BM object", "smem_bm_ptr_by_mem_type"},
      {"smem_bm_get_rank_id_by_gva", "address outside the GVA",
       [&] {
         return failure_value(smem_bm_get_rank_id_by_gva(bm, &on_stack),
                              static_cast<uint32_t>(SMEM_INVALID_PARAM));
       },
       kFailureValue, "the address is outside the GVA of BM object 0"},
      {"smem_bm_register_user_mem", "address 0",
       [&] { return smem_bm_register_user_mem(bm, 0, 4096); }, SMEM_INVALID_PARAM, "addr is 0"},
      {"smem_bm_register_user_mem", "size 0",
       [&] { return smem_bm_register_user_mem(bm, user.address(), 0); }, SMEM_INVALID_PARAM,
       "size is 0"},
      {"smem_bm_register_user_mem", "misaligned address",
       [&] { return smem_bm_register_user_mem(bm, user.address(8), 4096); }, SMEM_INVALID_PARAM,
       "is not aligned to 4096 bytes"},
      {"smem_bm_register_user_mem", "size wraps around",
       [&] { return smem_bm_register_user_mem(bm, user.address(), UINT64_MAX - 100); },
       SMEM_INVALID_PARAM, "addr + size overflows"},
      {"smem_bm_register_user_mem", "memory inside the GVA",
       [&] { return smem_bm_register_user_mem(bm, reinterpret_cast<uintptr_t>(slot), 4096); },
       SMEM_INVALID_PARAM, "overlaps the device range"},
      {"smem_bm_register_user_mem", "overlapping a registration",
       [&] { return smem_bm_register_user_mem(bm, registered.address(4096), 4096); },
       SMEM_INVALID_PARAM, "overlaps memory registered before"},
      {"smem_bm_unregister_user_mem", "never registered",
       [&] { return smem_bm_unregister_user_mem(bm, user.address()); }, SMEM_NOT_FOUND,
       "no user memory was registered at"},
  };
  drop_row_where_device_exceeds(live, "localHBMSize larger than the device", 64ull << 30);
  count += run_rows(live, messages);

  // Nothing was corrupted: copies into and out of the slot still work.
  std::vector<char> out(4096, 0x5c), back(4096, 0);
  EXPECT_EQ(copy(bm, out.data(), slot, out.size(), SMEMB_COPY_H2G), SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(copy(bm, slot, back.data(), back.size(), SMEMB_COPY_G2H), SMEM_SUCCESS);
  EXPECT_EQ(back, out);
  EXPECT_EQ(smem_bm_unregister_user_mem(bm, registered.address()), SMEM_SUCCESS);
  smem_bm_uninit(0);

  std::vector<Row> after_uninit = {
      {"smem_bm_wait", "after uninit", [&] { return smem_bm_wait(bm); }, SMEM_NOT_INITIALIZED,
       "smem_bm_init has not been called"},
      {"smem_bm_get_rank_id", "after uninit",
       [] { return failure_value(smem_bm_get_rank_id(), UINT32_MAX); }, kFailureValue,
       "smem_bm_init has not been called"},
      {"smem_bm_uninit", "a second uninit", [] { return no_code([] { smem_bm_uninit(0); }); },
       kNoCode, "smem_bm_init has not been called"},
  };
  count += run_rows(after_uninit, messages);
  std::printf("[bad input] BM: %d rows\n", count);
}

}  // namespace
}  // namespace memloom::bad_input
