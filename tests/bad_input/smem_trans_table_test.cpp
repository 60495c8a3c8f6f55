// Bad input of every function of smem_trans.h: before init, on live instances, with wrong and
// destroyed handles, and after uninit. (tests/trans has the deeper checks of each argument; this
// table covers every function alike.)
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "smem/host/smem_trans.h"
#include "src/store/server.h"
#include "tests/bad_input/bad_input_table.h"

namespace memloom::bad_input {
namespace {

smem_trans_config_t config_for(smem_trans_role_t role) {
  smem_trans_config_t config;
  smem_trans_config_init(&config);
  config.role = role;
  config.initTimeout = 2;
  return config;
}

// "127.0.0.1:<port>" of a free port, the form TRANS names instances by.
std::string free_unique_id() {
  return free_store_url().substr(6);
}

TEST(BadInputTable, SmemTrans) {
  const MessageSource messages = smem_messages();
  store::ServerOptions store_options;
  store_options.listen_url = "tcp://127.0.0.1:0";
  auto store = store::Server::start(store_options);
  const std::string url = store->url();
  int not_an_instance = 0;
  smem_trans_t fake = &not_an_instance;
  const smem_trans_config_t both = config_for(SMEM_TRANS_BOTH);
  auto init_with = [&](auto change) {
    smem_trans_config_t changed = both;
    change(changed);
    return smem_trans_init(&changed);
  };

  std::vector<Row> before_init = {
      {"smem_trans_config_init", "null config", [] { return smem_trans_config_init(nullptr); },
       SMEM_INVALID_PARAM, "config is null"},
      {"smem_trans_init", "null config", [] { return smem_trans_init(nullptr); },
       SMEM_INVALID_PARAM, "config is null"},
      {"smem_trans_init", "role NONE",
       [&] { return init_with([](auto& c) { c.role = SMEM_TRANS_NONE; }); }, SMEM_INVALID_PARAM,
       "config.role must be SMEM_TRANS_SENDER"},
      {"smem_trans_init", "initTimeout 0",
       [&] { return init_with([](auto& c) { c.initTimeout = 0; }); }, SMEM_INVALID_PARAM,
       "config.initTimeout must be at least 1 second"},
      {"smem_trans_init", "flags 4", [&] { return init_with([](auto& c) { c.flags = 4; }); },
       SMEM_INVALID_PARAM, "config.flags are reserved and must be 0, got 4"},
      {"smem_trans_init", "dataOpType unknown bit",
       [&] {
         return init_with(
             [](auto& c) { c.dataOpType = static_cast<smem_bm_data_op_type>(1u << 7); });
       },
       SMEM_INVALID_PARAM, "config.dataOpType must be 0 or a combination"},
      {"smem_trans_init", "deviceId out of range",
       [&] { return init_with([](auto& c) { c.deviceId = 100000; }); }, SMEM_INVALID_PARAM,
       "config.deviceId 100000 is not a device"},
      {"smem_trans_create", "before init",
       [&] {
         return failure_value(smem_trans_create(url.c_str(), free_unique_id().c_str(), &both),
                              smem_trans_t{nullptr});
       },
       kFailureValue, "smem_trans_init has not been called"},
      {"smem_trans_register_mem", "before init",
       [&] { return smem_trans_register_mem(fake, &not_an_instance, 4, 0); }, SMEM_INVALID_PARAM,
       "smem_trans_init has not been called"},
  };
  int count = run_rows(before_init, messages);

  ASSERT_EQ(smem_trans_init(&both), SMEM_SUCCESS);
  const std::string my_id = free_unique_id(), peer_id = free_unique_id(),
                    sender_id = free_unique_id();
  smem_trans_t handle = smem_trans_create(url.c_str(), my_id.c_str(), &both);
  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
  // Destroyed before the other instances are created: a stale handle must not name them.
  smem_trans_t destroyed = smem_trans_create(url.c_str(), free_unique_id().c_str(), &both);
  ASSERT_NE(destroyed, nullptr);
  smem_trans_destroy(destroyed, 0);
  const smem_trans_config_t receiver_config = config_for(SMEM_TRANS_RECEIVER);
  smem_trans_t peer = smem_trans_create(url.c_str(), peer_id.c_str(), &receiver_config);
  ASSERT_NE(peer, nullptr) << smem_get_last_err_msg();
  const smem_trans_config_t sender_config = config_for(SMEM_TRANS_SENDER);
  smem_trans_t sender = smem_trans_create(url.c_str(), sender_id.c_str(), &sender_config);
  ASSERT_NE(sender, nullptr) << smem_get_last_err_msg();
  std::vector<char> target(8192), local(8192, 3), mine(8192);
  ASSERT_EQ(smem_trans_register_mem(peer, target.data(), 4096, 0), SMEM_SUCCESS);  // half of it
  ASSERT_EQ(smem_trans_register_mem(handle, mine.data(), 4096, 0), SMEM_SUCCESS);
  void* wrap = reinterpret_cast<void*>(UINTPTR_MAX - 8);
  const char* pid = peer_id.c_str();
  auto create = [&](const char* store_url, const char* id, const smem_trans_config_t* config) {
    return failure_value(smem_trans_create(store_url, id, config), smem_trans_t{nullptr});
  };
  const void* locals[2] = {local.data(), nullptr};
  void* remotes[2] = {target.data(), target.data() + 8};
  size_t sizes[2] = {8, 8};
  void* addresses[2] = {local.data(), local.data() + 4096};
  size_t capacities[2] = {64, 0};
  int stream_stand_in = 0;

  std::vector<Row> live = {
      {"smem_trans_create", "null storeUrl",
       [&] { return create(nullptr, "127.0.0.1:5000", &both); }, kFailureValue, "storeUrl is null"},
      {"smem_trans_create", "null uniqueId", [&] { return create(url.c_str(), nullptr, &both); },
       kFailureValue, "uniqueId is null"},
      {"smem_trans_create", "null config",
       [&] { return create(url.c_str(), "127.0.0.1:5000", nullptr); }, kFailureValue,
       "config is null"},
      {"smem_trans_create", "uniqueId without a port",
       [&] { return create(url.c_str(), "127.0.0.1", &both); }, kFailureValue, "uniqueId"},
      {"smem_trans_create", "uniqueId port 0",
       [&] { return create(url.c_str(), "127.0.0.1:0", &both); }, kFailureValue, "uniqueId"},
      {"smem_trans_create", "uniqueId port out of range",
       [&] { return create(url.c_str(), "127.0.0.1:65536", &both); }, kFailureValue, "uniqueId"},
      {"smem_trans_create", "uniqueId a host name",
       [&] { return create(url.c_str(), "localhost:5000", &both); }, kFailureValue, "uniqueId"},
      {"smem_trans_create", "uniqueId not of this host",
       [&] { return create(url.c_str(), "192.0.2.1:5000", &both); }, kFailureValue,
       "not an address of this host"},
      {"smem_trans_create", "uniqueId in use",
       [&] { return create(url.c_str(), my_id.c_str(), &both); }, kFailureValue, my_id},
      {"smem_trans_create", "store URL not a URL",
       [&] { return create("not a url", free_unique_id().c_str(), &both); }, kFailureValue,
       "not a url"},
      {"smem_trans_destroy", "null handle",
       [] { return no_code([] { smem_trans_destroy(nullptr, 0); }); }, kNoCode, "handle is null"},
      {"smem_trans_destroy", "destroyed handle",
       [&] { return no_code([&] { smem_trans_destroy(destroyed, 0); }); }, kNoCode,
       "destroyed twice?"},
      {"smem_trans_malloc", "wrong handle",
       [&] { return failure_value(smem_trans_malloc(fake, 64), static_cast<void*>(nullptr)); },
       kFailureValue, "handle is not a live transfer instance"},
      {"smem_trans_malloc", "capacity 0",
       [&] { return failure_value(smem_trans_malloc(handle, 0), static_cast<void*>(nullptr)); },
       kFailureValue, "capacity is 0"},
      {"smem_trans_malloc", "capacity too large",
       [&] {
         return failure_value(smem_trans_malloc(handle, size_t{1} << 52),
                              static_cast<void*>(nullptr));
       },
       kFailureValue, "smem_trans_malloc"},
      {"smem_trans_free", "null address", [&] { return smem_trans_free(handle, nullptr); },
       SMEM_INVALID_PARAM, "address is null"},
      {"smem_trans_free", "not from smem_trans_malloc",
       [&] { return smem_trans_free(handle, local.data()); }, SMEM_INVALID_PARAM,
       "smem_trans_malloc"},
      {"smem_trans_register_mem", "null address",
       [&] { return smem_trans_register_mem(handle, nullptr, 8, 0); }, SMEM_INVALID_PARAM,
       "address is null"},
      {"smem_trans_register_mem", "capacity 0",
       [&] { return smem_trans_register_mem(handle, local.data(), 0, 0); }, SMEM_INVALID_PARAM,
       "capacity is 0"},
      {"smem_trans_register_mem", "range wraps around",
       [&] { return smem_trans_register_mem(handle, wrap, 64, 0); }, SMEM_INVALID_PARAM,
       "the range wraps around the address space"},
      {"smem_trans_register_mem", "flags 1",
       [&] { return smem_trans_register_mem(handle, local.data(), 8, 1); }, SMEM_INVALID_PARAM,
       "flags are reserved and must be 0, got 1"},
      {"smem_trans_register_mem", "overlapping a registration",
       [&] { return smem_trans_register_mem(handle, mine.data() + 100, 8, 0); }, SMEM_INVALID_PARAM,
       "overlaps"},
      {"smem_trans_register_mem", "destroyed handle",
       [&] { return smem_trans_register_mem(destroyed, local.data(), 8, 0); }, SMEM_INVALID_PARAM,
       "handle is not a live transfer instance"},
      {"smem_trans_batch_register_mem", "null addresses",
       [&] { return smem_trans_batch_register_mem(handle, nullptr, capacities, 2, 0); },
       SMEM_INVALID_PARAM, "addresses is null"},
      {"smem_trans_batch_register_mem", "null capacities",
       [&] { return smem_trans_batch_register_mem(handle, addresses, nullptr, 2, 0); },
       SMEM_INVALID_PARAM, "capacities is null"},
      {"smem_trans_batch_register_mem", "count 0",
       [&] { return smem_trans_batch_register_mem(handle, addresses, capacities, 0, 0); },
       SMEM_INVALID_PARAM, "count is 0"},
      {"smem_trans_batch_register_mem", "entry 1 capacity 0",
       [&] { return smem_trans_batch_register_mem(handle, addresses, capacities, 2, 0); },
       SMEM_INVALID_PARAM, "the capacity of entry 1 is 0"},
      {"smem_trans_deregister_mem", "null address",
       [&] { return smem_trans_deregister_mem(handle, nullptr); }, SMEM_INVALID_PARAM,
       "address is null"},
      {"smem_trans_deregister_mem", "never registered",
       [&] { return smem_trans_deregister_mem(handle, local.data()); }, SMEM_NOT_FOUND,
       "registered"},
      {"smem_trans_write", "null local address",
       [&] { return smem_trans_write(handle, nullptr, pid, target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "the local address is null"},
      {"smem_trans_write", "null remote address",
       [&] { return smem_trans_write(handle, local.data(), pid, nullptr, 8, 0); },
       SMEM_INVALID_PARAM, "the remote address is null"},
      {"smem_trans_write", "size 0",
       [&] { return smem_trans_write(handle, local.data(), pid, target.data(), 0, 0); },
       SMEM_INVALID_PARAM, "the data size is 0"},
      {"smem_trans_write", "range wraps around",
       [&] { return smem_trans_write(handle, local.data(), pid, wrap, 64, 0); }, SMEM_INVALID_PARAM,
       "wraps around the address space"},
      {"smem_trans_write", "null peer",
       [&] { return smem_trans_write(handle, local.data(), nullptr, target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "remoteUniqueId is null"},
      {"smem_trans_write", "malformed peer",
       [&] { return smem_trans_write(handle, local.data(), "nonsense", target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "nonsense"},
      {"smem_trans_write", "unknown peer",
       [&] { return smem_trans_write(handle, local.data(), "127.0.0.1:1", target.data(), 8, 0); },
       SMEM_NOT_FOUND, "no transfer instance named '127.0.0.1:1'"},
      {"smem_trans_write", "flags 2",
       [&] { return smem_trans_write(handle, local.data(), pid, target.data(), 8, 2); },
       SMEM_INVALID_PARAM, "flags are reserved"},
      {"smem_trans_write", "remote range not registered",
       [&] { return smem_trans_write(handle, local.data(), pid, target.data() + 4090, 64, 0); },
       SMEM_INVALID_PARAM, "is not inside memory registered by"},
      {"smem_trans_write", "from a RECEIVER",
       [&] { return smem_trans_write(peer, local.data(), my_id.c_str(), mine.data(), 8, 0); },
       SMEM_NOT_SUPPORTED, "has role SMEM_TRANS_RECEIVER"},
      {"smem_trans_write", "to a SENDER",
       [&] {
         return smem_trans_write(handle, local.data(), sender_id.c_str(), target.data(), 8, 0);
       },
       SMEM_NOT_SUPPORTED, "has role SMEM_TRANS_SENDER"},
      {"smem_trans_write", "destroyed handle",
       [&] { return smem_trans_write(destroyed, local.data(), pid, target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "handle is not a live transfer instance"},
      {"smem_trans_batch_write", "null local array",
       [&] { return smem_trans_batch_write(handle, nullptr, pid, remotes, sizes, 2, 0); },
       SMEM_INVALID_PARAM, "the local address array is null"},
      {"smem_trans_batch_write", "batchSize 0",
       [&] { return smem_trans_batch_write(handle, locals, pid, remotes, sizes, 0, 0); },
       SMEM_INVALID_PARAM, "batchSize is 0"},
      {"smem_trans_batch_write", "entry 1 null",
       [&] { return smem_trans_batch_write(handle, locals, pid, remotes, sizes, 2, 0); },
       SMEM_INVALID_PARAM, "the local address of entry 1 is null"},
      {"smem_trans_read", "null local address",
       [&] { return smem_trans_read(handle, nullptr, pid, target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "the local address is null"},
      {"smem_trans_read", "remote range not registered",
       [&] { return smem_trans_read(handle, local.data(), pid, target.data() + 5000, 8, 0); },
       SMEM_INVALID_PARAM, "is not inside memory registered by"},
      {"smem_trans_batch_read", "null size array",
       [&] {
         return smem_trans_batch_read(handle, addresses, pid, const_cast<const void**>(remotes),
                                      nullptr, 2, 0);
       },
       SMEM_INVALID_PARAM, "the data size array is null"},
      {"smem_trans_read_submit", "null stream",
       [&] {
         return smem_trans_read_submit(handle, local.data(), pid, target.data(), 8, nullptr, 0);
       },
       SMEM_INVALID_PARAM, "stream is null"},
      {"smem_trans_write_submit", "null stream",
       [&] {
         return smem_trans_write_submit(handle, local.data(), pid, target.data(), 8, nullptr, 0);
       },
       SMEM_INVALID_PARAM, "stream is null"},
      {"smem_trans_batch_read_submit", "batchSize 0",
       [&] {
         return smem_trans_batch_read_submit(handle, addresses, pid,
                                             const_cast<const void**>(remotes), sizes, 0,
                                             &stream_stand_in, 0);
       },
       SMEM_INVALID_PARAM, "batchSize is 0"},
      {"smem_trans_batch_write_submit", "null stream",
       [&] {
         return smem_trans_batch_write_submit(handle, locals, pid, remotes, sizes, 1, nullptr, 0);
       },
       SMEM_INVALID_PARAM, "stream is null"},
  };
  count += run_rows(live, messages);

  // Nothing was corrupted: a write and a read of the registered range still work.
  EXPECT_EQ(smem_trans_write(handle, local.data(), pid, target.data(), 4096, 0), SMEM_SUCCESS)
      << smem_get_last_err_msg();
  std::vector<char> back(4096);
  EXPECT_EQ(smem_trans_read(handle, back.data(), pid, target.data(), 4096, 0), SMEM_SUCCESS);
  EXPECT_EQ(back, std::vector<char>(4096, 3));
  smem_trans_uninit(0);

  std::vector<Row> after_uninit = {
      {"smem_trans_register_mem", "after uninit",
       [&] { return smem_trans_register_mem(handle, local.data(), 8, 0); }, SMEM_INVALID_PARAM,
       "smem_trans_init has not been called"},
      {"smem_trans_write", "after uninit",
       [&] { return smem_trans_write(handle, local.data(), pid, target.data(), 8, 0); },
       SMEM_INVALID_PARAM, "smem_trans_init has not been called"},
  };
  count += run_rows(after_uninit, messages);
  std::printf("[bad input] TRANS: %d rows\n", count);
}

}  // namespace
}  // namespace memloom::bad_input
