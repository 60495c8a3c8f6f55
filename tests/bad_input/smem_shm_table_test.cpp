// Bad input of every function of smem.h (the common API) and smem_shm.h: before init, on live
// objects, with wrong and destroyed handles, and after uninit.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "smem/host/smem.h"
#include "smem/host/smem_shm.h"
#include "tests/bad_input/bad_input_table.h"

namespace memloom::bad_input {
namespace {

constexpr uint64_t kSymmetric = 2ull << 20;

smem_shm_config_t quick_config() {
  smem_shm_config_t config;
  smem_shm_config_init(&config);
  config.shmInitTimeout = 10;
  config.shmCreateTimeout = 10;
  config.controlOperationTimeout = 10;
  return config;  // startConfigStoreServer: rank 0 (this process) serves the store
}

void ignore_log_line(int, const char*) {}

TEST(BadInputTable, SmemCommon) {
  const std::string url = free_store_url();
  std::vector<Row> rows = {
      {"smem_create_config_store", "null URL", [] { return smem_create_config_store(nullptr); },
       SMEM_INVALID_PARAM, "storeUrl is null"},
      {"smem_create_config_store", "not a URL",
       [] { return smem_create_config_store("not a url"); }, SMEM_INVALID_PARAM, "not a url"},
      {"smem_create_config_store", "port out of range",
       [] { return smem_create_config_store("tcp://127.0.0.1:70000"); }, SMEM_INVALID_PARAM,
       "70000"},
      {"smem_create_config_store", "a second store in this process",
       [&] {
         if (smem_create_config_store(url.c_str()) != SMEM_SUCCESS) return SMEM_ERROR;
         return smem_create_config_store(free_store_url().c_str());
       },
       SMEM_INVALID_PARAM, "a config store already runs in this process"},
      {"smem_set_extern_logger", "null function", [] { return smem_set_extern_logger(nullptr); },
       SMEM_INVALID_PARAM, "the logger function is null"},
      {"smem_set_log_level", "level -1", [] { return smem_set_log_level(-1); }, SMEM_INVALID_PARAM,
       "got -1"},
      {"smem_set_log_level", "level 4", [] { return smem_set_log_level(4); }, SMEM_INVALID_PARAM,
       "0 (debug) .. 3 (error), got 4"},
      {"smem_set_conf_store_tls", "empty tls_info",
       [] { return smem_set_conf_store_tls(true, "", 0); }, SMEM_INVALID_PARAM,
       "tls_info is empty"},
      {"smem_set_config_store_tls_key", "a key that is not PEM",
       [] { return smem_set_config_store_tls_key("k", 1, "p", 1, nullptr); }, SMEM_INVALID_PARAM,
       "cannot read the TLS private key"},
  };
  const int count = run_rows(rows, smem_messages());
  // The failures left everything usable: the logger can be set, the store serves.
  EXPECT_EQ(smem_set_extern_logger(ignore_log_line), SMEM_SUCCESS);
  EXPECT_EQ(smem_init(0), SMEM_SUCCESS);
  smem_uninit();
  EXPECT_EQ(smem_create_config_store(url.c_str()), SMEM_SUCCESS) << smem_get_last_err_msg();
  smem_uninit();
  std::printf("[bad input] smem common: %d rows\n", count);
}

TEST(BadInputTable, SmemShm) {
  const MessageSource messages = smem_messages();
  const std::string url = free_store_url();
  int not_an_object = 0;
  smem_shm_t fake = &not_an_object;
  smem_shm_config_t config = quick_config();
  void* gva = nullptr;
  auto with_config = [&](auto change) {
    smem_shm_config_t changed = quick_config();
    change(changed);
    return smem_shm_init(url.c_str(), 1, 0, 0, &changed);
  };

  std::vector<Row> before_init = {
      {"smem_shm_config_init", "null config", [] { return smem_shm_config_init(nullptr); },
       SMEM_INVALID_PARAM, "config is null"},
      {"smem_shm_init", "null URL", [&] { return smem_shm_init(nullptr, 1, 0, 0, &config); },
       SMEM_INVALID_PARAM, "configStoreIpPort is null"},
      {"smem_shm_init", "worldSize 0", [&] { return smem_shm_init(url.c_str(), 0, 0, 0, &config); },
       SMEM_INVALID_PARAM, "worldSize 0 is out of range [1, 1024]"},
      {"smem_shm_init", "worldSize too large",
       [&] { return smem_shm_init(url.c_str(), 1025, 0, 0, &config); }, SMEM_INVALID_PARAM,
       "worldSize 1025 is out of range"},
      {"smem_shm_init", "rankId out of range",
       [&] { return smem_shm_init(url.c_str(), 4, 4, 0, &config); }, SMEM_INVALID_PARAM,
       "rankId 4 is out of range [0, 4)"},
      {"smem_shm_init", "shmInitTimeout 0",
       [&] { return with_config([](auto& c) { c.shmInitTimeout = 0; }); }, SMEM_INVALID_PARAM,
       "shmInitTimeout must be at least 1 second"},
      {"smem_shm_init", "shmCreateTimeout 0",
       [&] { return with_config([](auto& c) { c.shmCreateTimeout = 0; }); }, SMEM_INVALID_PARAM,
       "shmCreateTimeout"},
      {"smem_shm_init", "controlOperationTimeout 0",
       [&] { return with_config([](auto& c) { c.controlOperationTimeout = 0; }); },
       SMEM_INVALID_PARAM, "controlOperationTimeout"},
      {"smem_shm_init", "deviceId out of range",
       [&] { return smem_shm_init(url.c_str(), 1, 0, 9999, &config); }, SMEM_INVALID_PARAM,
       "deviceId 9999 is out of range"},
      {"smem_shm_init", "not a URL", [&] { return smem_shm_init("nonsense", 1, 0, 0, &config); },
       SMEM_INVALID_PARAM, "nonsense"},
      {"smem_shm_create", "before init",
       [&] {
         return failure_value(smem_shm_create(0, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva),
                              smem_shm_t{nullptr});
       },
       kFailureValue, "smem_shm_init has not been called"},
      {"smem_shm_control_barrier", "before init", [&] { return smem_shm_control_barrier(fake); },
       SMEM_NOT_INITIALIZED, "smem_shm_init has not been called"},
      {"smem_shm_uninit", "before init", [] { return no_code([] { smem_shm_uninit(0); }); },
       kNoCode, "smem_shm_init has not been called"},
  };
  int count = run_rows(before_init, messages);

  ASSERT_EQ(smem_shm_init(url.c_str(), 1, 0, 0, &config), SMEM_SUCCESS) << smem_get_last_err_msg();
  smem_shm_t shm = smem_shm_create(0, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
  ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
  smem_shm_t destroyed = smem_shm_create(1, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
  ASSERT_NE(destroyed, nullptr) << smem_get_last_err_msg();
  ASSERT_EQ(smem_shm_destroy(destroyed, 0), SMEM_SUCCESS);
  // Created after `destroyed` went: the stale handle must not name it.
  smem_shm_t later = smem_shm_create(2, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
  ASSERT_NE(later, nullptr) << smem_get_last_err_msg();
  std::vector<char> send(8, 1), receive(4), context(64, 2), big_context(65 * 1024);
  uint32_t reach = 0;
  uint32_t value = 0;
  auto create = [&](uint32_t id, uint32_t size, uint32_t rank, uint64_t bytes, uint32_t ops) {
    return failure_value(
        smem_shm_create(id, size, rank, bytes, static_cast<smem_shm_data_op_type>(ops), 0, &gva),
        smem_shm_t{nullptr});
  };
  const std::string long_key(300, 'k');

  std::vector<Row> live = {
      {"smem_shm_create", "null gva",
       [&] {
         return failure_value(smem_shm_create(4, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, nullptr),
                              smem_shm_t{nullptr});
       },
       kFailureValue, "gva is null"},
      {"smem_shm_create", "id out of range", [&] { return create(64, 1, 0, kSymmetric, 1); },
       kFailureValue, "id 64 is out of range [0, 63]"},
      {"smem_shm_create", "id in use", [&] { return create(0, 1, 0, kSymmetric, 1); },
       kFailureValue, "shm object id 0 is in use"},
      {"smem_shm_create", "rankSize 0", [&] { return create(4, 0, 0, kSymmetric, 1); },
       kFailureValue, "rankSize 0 is out of range"},
      {"smem_shm_create", "rankSize above the world size",
       [&] { return create(4, 2, 0, kSymmetric, 1); }, kFailureValue,
       "rankSize 2 exceeds the world size 1"},
      {"smem_shm_create", "rankId out of range", [&] { return create(4, 1, 1, kSymmetric, 1); },
       kFailureValue, "rankId 1 is out of range [0, 1)"},
      {"smem_shm_create", "symmetricSize 0", [&] { return create(4, 1, 0, 0, 1); }, kFailureValue,
       "symmetricSize 0 is out of range"},
      {"smem_shm_create", "symmetricSize above the maximum",
       [&] { return create(4, 1, 0, (64ull << 30) + kSymmetric, 1); }, kFailureValue,
       "is out of range [1, 68719476736]"},
      {"smem_shm_create", "symmetricSize larger than the device",
       [&] { return create(4, 1, 0, 32ull << 30, 1); }, kFailureValue, "32.0 GiB"},
      {"smem_shm_create", "symmetricSize misaligned",
       [&] { return create(4, 1, 0, kSymmetric + 1, 1); }, kFailureValue,
       "is not a multiple of " + backend_granularity_phrase()},
      {"smem_shm_create", "dataOpType 0", [&] { return create(4, 1, 0, kSymmetric, 0); },
       kFailureValue, "dataOpType 0 is not a set of smem_shm_data_op_type values"},
      {"smem_shm_create", "dataOpType with an unknown bit",
       [&] { return create(4, 1, 0, kSymmetric, SMEMS_DATA_OP_RDMA | 8u); }, kFailureValue,
       "dataOpType 12 is not a set of smem_shm_data_op_type values"},
      {"smem_shm_get_symmetric_size", "null handle",
       [&] { return failure_value(smem_shm_get_symmetric_size(nullptr), uint64_t{0}); },
       kFailureValue, "the shm handle is null"},
      {"smem_shm_get_symmetric_size", "wrong handle",
       [&] { return failure_value(smem_shm_get_symmetric_size(fake), uint64_t{0}); }, kFailureValue,
       "is not a live shm object"},
      {"smem_shm_get_symmetric_size", "destroyed handle",
       [&] { return failure_value(smem_shm_get_symmetric_size(destroyed), uint64_t{0}); },
       kFailureValue, "already destroyed"},
      {"smem_shm_destroy", "null handle", [&] { return smem_shm_destroy(nullptr, 0); },
       SMEM_INVALID_PARAM, "the shm handle is null"},
      {"smem_shm_destroy", "wrong handle", [&] { return smem_shm_destroy(fake, 0); },
       SMEM_INVALID_PARAM, "is not a live shm object"},
      {"smem_shm_destroy", "destroyed handle", [&] { return smem_shm_destroy(destroyed, 0); },
       SMEM_INVALID_PARAM, "already destroyed"},
      {"smem_shm_set_extra_context", "null context",
       [&] { return smem_shm_set_extra_context(shm, nullptr, 8); }, SMEM_INVALID_PARAM,
       "context is null"},
      {"smem_shm_set_extra_context", "size 0",
       [&] { return smem_shm_set_extra_context(shm, context.data(), 0); }, SMEM_INVALID_PARAM,
       "context size 0 is out of range [1, 65536]"},
      {"smem_shm_set_extra_context", "size too large",
       [&] {
         return smem_shm_set_extra_context(shm, big_context.data(),
                                           static_cast<uint32_t>(big_context.size()));
       },
       SMEM_INVALID_PARAM, "context size 66560 is out of range"},
      {"smem_shm_set_extra_context", "wrong handle",
       [&] { return smem_shm_set_extra_context(fake, context.data(), 8); }, SMEM_INVALID_PARAM,
       "is not a live shm object"},
      {"smem_shm_extra_context_addr", "rank out of range",
       [&] {
         return failure_value(smem_shm_extra_context_addr(shm, 1), static_cast<void*>(nullptr));
       },
       kFailureValue, "rank 1 is out of range [0, 1)"},
      {"smem_shm_extra_context_addr", "rank too large",
       [&] {
         return failure_value(smem_shm_extra_context_addr(shm, UINT32_MAX),
                              static_cast<void*>(nullptr));
       },
       kFailureValue, "rank is too large"},
      {"smem_shm_extra_context_size", "rank out of range",
       [&] { return failure_value(smem_shm_extra_context_size(shm, 7), UINT32_MAX); },
       kFailureValue, "rank 7 is out of range"},
      {"smem_shm_extra_context_size", "destroyed handle",
       [&] { return failure_value(smem_shm_extra_context_size(destroyed, 0), UINT32_MAX); },
       kFailureValue, "already destroyed"},
      {"smem_shm_get_global_rank", "null handle",
       [&] { return failure_value(smem_shm_get_global_rank(nullptr), UINT32_MAX); }, kFailureValue,
       "the shm handle is null"},
      {"smem_shm_get_global_rank_size", "wrong handle",
       [&] { return failure_value(smem_shm_get_global_rank_size(fake), UINT32_MAX); },
       kFailureValue, "is not a live shm object"},
      {"smem_shm_control_barrier", "null handle", [&] { return smem_shm_control_barrier(nullptr); },
       SMEM_INVALID_PARAM, "the shm handle is null"},
      {"smem_shm_control_barrier", "destroyed handle",
       [&] { return smem_shm_control_barrier(destroyed); }, SMEM_INVALID_PARAM,
       "already destroyed"},
      {"smem_shm_control_allgather", "null sendBuf",
       [&] { return smem_shm_control_allgather(shm, nullptr, 8, receive.data(), 8); },
       SMEM_INVALID_PARAM, "sendBuf or recvBuf is null"},
      {"smem_shm_control_allgather", "null recvBuf",
       [&] { return smem_shm_control_allgather(shm, send.data(), 8, nullptr, 8); },
       SMEM_INVALID_PARAM, "sendBuf or recvBuf is null"},
      {"smem_shm_control_allgather", "sendSize 0",
       [&] { return smem_shm_control_allgather(shm, send.data(), 0, receive.data(), 4); },
       SMEM_INVALID_PARAM, "sendSize must be positive"},
      {"smem_shm_control_allgather", "recvSize too small",
       [&] { return smem_shm_control_allgather(shm, send.data(), 8, receive.data(), 4); },
       SMEM_INVALID_PARAM, "recvSize 4 is smaller than sendSize * rankSize = 8"},
      {"smem_shm_control_allgather", "wrong handle",
       [&] { return smem_shm_control_allgather(fake, send.data(), 8, receive.data(), 8); },
       SMEM_INVALID_PARAM, "is not a live shm object"},
      {"smem_shm_subgroup_barrier", "null key",
       [&] { return smem_shm_subgroup_barrier(shm, nullptr, 1, 0); }, SMEM_INVALID_PARAM,
       "key is null"},
      {"smem_shm_subgroup_barrier", "empty key",
       [&] { return smem_shm_subgroup_barrier(shm, "", 1, 0); }, SMEM_INVALID_PARAM,
       "sub-group key must be 1..256 characters"},
      {"smem_shm_subgroup_barrier", "key too long",
       [&] { return smem_shm_subgroup_barrier(shm, long_key.c_str(), 1, 0); }, SMEM_INVALID_PARAM,
       "sub-group key must be 1..256 characters"},
      {"smem_shm_subgroup_barrier", "rankSize 0",
       [&] { return smem_shm_subgroup_barrier(shm, "k", 0, 0); }, SMEM_INVALID_PARAM,
       "sub-group size 0 is out of range [1, 1]"},
      {"smem_shm_subgroup_barrier", "rankSize above the object's",
       [&] { return smem_shm_subgroup_barrier(shm, "k", 2, 0); }, SMEM_INVALID_PARAM,
       "sub-group size 2 is out of range"},
      {"smem_shm_subgroup_barrier", "rankSize too large",
       [&] { return smem_shm_subgroup_barrier(shm, "k", UINT32_MAX, 0); }, SMEM_INVALID_PARAM,
       "rankSize is too large"},
      {"smem_shm_subgroup_barrier", "rankId out of range",
       [&] { return smem_shm_subgroup_barrier(shm, "k", 1, 1); }, SMEM_INVALID_PARAM,
       "sub-group rank 1 is out of range [0, 1)"},
      {"smem_shm_subgroup_allgather", "null buffers",
       [&] { return smem_shm_subgroup_allgather(shm, "k2", 1, 0, nullptr, 8, nullptr, 8); },
       SMEM_INVALID_PARAM, "sendBuf or recvBuf is null"},
      {"smem_shm_subgroup_allgather", "null key",
       [&] {
         return smem_shm_subgroup_allgather(shm, nullptr, 1, 0, send.data(), 8, receive.data(), 8);
       },
       SMEM_INVALID_PARAM, "key is null"},
      {"smem_shm_topology_can_reach", "remoteRank out of range",
       [&] { return smem_shm_topology_can_reach(shm, 1, &reach); }, SMEM_INVALID_PARAM,
       "remoteRank 1 is out of range [0, 1)"},
      {"smem_shm_topology_can_reach", "null reachInfo",
       [&] { return smem_shm_topology_can_reach(shm, 0, nullptr); }, SMEM_INVALID_PARAM,
       "reachInfo is null"},
      {"smem_shm_atomic_alloc_value", "limit 0",
       [&] { return smem_shm_atomic_alloc_value(shm, 0, &value); }, SMEM_INVALID_PARAM,
       "limit 0 is out of range [1, 1024]"},
      {"smem_shm_atomic_alloc_value", "limit too large",
       [&] { return smem_shm_atomic_alloc_value(shm, 1025, &value); }, SMEM_INVALID_PARAM,
       "limit 1025 is out of range"},
      {"smem_shm_atomic_alloc_value", "null value",
       [&] { return smem_shm_atomic_alloc_value(shm, 4, nullptr); }, SMEM_INVALID_PARAM,
       "value is null"},
      {"smem_shm_atomic_release_value", "negative value",
       [&] { return smem_shm_atomic_release_value(shm, -1); }, SMEM_INVALID_PARAM,
       "value -1 is out of range [0, 1024)"},
      {"smem_shm_atomic_release_value", "value never allocated",
       [&] { return smem_shm_atomic_release_value(shm, 5); }, SMEM_NOT_FOUND,
       "value 5 is not allocated"},
      {"smem_shm_register_exit", "null function",
       [&] { return smem_shm_register_exit(shm, nullptr); }, SMEM_INVALID_PARAM,
       "the exit function is null"},
      {"smem_shm_register_exit", "wrong handle",
       [&] {
         return smem_shm_register_exit(
             fake, +[](int) {});
       },
       SMEM_INVALID_PARAM, "is not a live shm object"},
      {"smem_shm_global_exit", "null handle",
       [&] { return no_code([] { smem_shm_global_exit(nullptr, 3); }); }, kNoCode,
       "the shm handle is null"},
      {"smem_shm_global_exit", "destroyed handle",
       [&] { return no_code([&] { smem_shm_global_exit(destroyed, 3); }); }, kNoCode,
       "already destroyed"},
  };
  drop_row_where_device_exceeds(live, "symmetricSize larger than the device", 64ull << 30);
  count += run_rows(live, messages);

  // Nothing was corrupted: the object still works, and so do new ones.
  EXPECT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
  std::vector<char> gathered(8);
  EXPECT_EQ(smem_shm_control_allgather(shm, send.data(), 8, gathered.data(), 8), SMEM_SUCCESS);
  EXPECT_EQ(gathered, send);
  EXPECT_EQ(smem_shm_atomic_alloc_value(shm, 4, &value), SMEM_SUCCESS);
  EXPECT_EQ(smem_shm_atomic_release_value(shm, static_cast<int32_t>(value)), SMEM_SUCCESS);
  EXPECT_EQ(smem_shm_get_symmetric_size(later), kSymmetric) << "a stale handle reached it";
  smem_shm_t again = smem_shm_create(1, 1, 0, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
  EXPECT_NE(again, nullptr) << smem_get_last_err_msg();
  EXPECT_EQ(smem_shm_destroy(again, 0), SMEM_SUCCESS);
  smem_shm_uninit(0);

  std::vector<Row> after_uninit = {
      {"smem_shm_control_barrier", "after uninit", [&] { return smem_shm_control_barrier(shm); },
       SMEM_NOT_INITIALIZED, "smem_shm_init has not been called"},
      {"smem_shm_destroy", "after uninit", [&] { return smem_shm_destroy(shm, 0); },
       SMEM_NOT_INITIALIZED, "smem_shm_init has not been called"},
      {"smem_shm_uninit", "a second uninit", [] { return no_code([] { smem_shm_uninit(0); }); },
       kNoCode, "smem_shm_init has not been called"},
  };
  count += run_rows(after_uninit, messages);
  std::printf("[bad input] SHM: %d rows\n", count);
}

}  // namespace
}  // namespace memloom::bad_input
