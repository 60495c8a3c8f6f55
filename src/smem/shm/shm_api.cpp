// The MemFabric SHM facade: argument checks, the process's shm state, and the handle registry.
// Every entry point runs through facade_call / facade_value (src/smem/smem_facade.h).
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "smem/host/smem_shm.h"
#include "src/core/platform_loader.h"
#include "src/smem/shm/shm_object.h"
#include "src/smem/smem_facade.h"
#include "src/smem/smem_world.h"

namespace memloom::smem {
namespace {

struct ShmState {
  std::mutex mutex;
  std::shared_ptr<SmemWorld> world;
  smem_shm_config_t config{};
  std::map<const void*, std::shared_ptr<ShmObject>> objects;
  std::map<uint32_t, uint64_t> instances;  // objects created per id, for fresh store keys
};

// Never destroyed: an exit function run by smem_shm_global_exit may call exit() on any thread.
ShmState& state() {
  static auto* shm_state = new ShmState();
  return *shm_state;
}

std::chrono::milliseconds seconds(uint32_t value) {
  return std::chrono::milliseconds(static_cast<int64_t>(value) * 1000);
}

void check_timeout(const char* name, uint32_t value) {
  MEMLOOM_CHECK_ARG(value >= 1, std::string(name) + " must be at least 1 second");
}

std::shared_ptr<ShmObject> lookup(smem_shm_t handle) {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the shm handle is null");
  ShmState& shm = state();
  std::lock_guard<std::mutex> lock(shm.mutex);
  if (!shm.world) raise_not_initialized("smem_shm_init has not been called");
  auto found = shm.objects.find(handle);
  MEMLOOM_CHECK_ARG(found != shm.objects.end(),
                    "the handle is not a live shm object (never created or already destroyed)");
  return found->second;
}

int to_int(uint32_t value, const char* name) {
  MEMLOOM_CHECK_ARG(value <= static_cast<uint32_t>(INT32_MAX), std::string(name) + " is too large");
  return static_cast<int>(value);
}

}  // namespace
}  // namespace memloom::smem

using memloom::raise;
using memloom::Status;
using namespace memloom::smem;

extern "C" {

int32_t smem_shm_config_init(smem_shm_config_t* config) {
  return facade_call("smem_shm_config_init", [&] {
    MEMLOOM_CHECK_ARG(config != nullptr, "config is null");
    *config = smem_shm_config_t{};
    config->shmInitTimeout = 120;
    config->shmCreateTimeout = 120;
    config->controlOperationTimeout = 120;
    config->startConfigStoreServer = true;
    config->flags = 0;
  });
}

int32_t smem_shm_init(const char* configStoreIpPort, uint32_t worldSize, uint32_t rankId,
                      uint16_t deviceId, smem_shm_config_t* config) {
  return facade_call("smem_shm_init", [&] {
    MEMLOOM_CHECK_ARG(configStoreIpPort != nullptr, "configStoreIpPort is null");
    MEMLOOM_CHECK_ARG(worldSize >= 1 && worldSize <= SMEM_WORLD_SIZE_MAX,
                      "worldSize " + std::to_string(worldSize) + " is out of range [1, " +
                          std::to_string(SMEM_WORLD_SIZE_MAX) + "]");
    MEMLOOM_CHECK_ARG(rankId < worldSize, "rankId " + std::to_string(rankId) +
                                              " is out of range [0, " + std::to_string(worldSize) +
                                              ")");
    smem_shm_config_t effective;
    smem_shm_config_init(&effective);
    if (config != nullptr) effective = *config;
    check_timeout("shmInitTimeout", effective.shmInitTimeout);
    check_timeout("shmCreateTimeout", effective.shmCreateTimeout);
    check_timeout("controlOperationTimeout", effective.controlOperationTimeout);

    ShmState& shm = state();
    std::lock_guard<std::mutex> lock(shm.mutex);
    if (shm.world)
      raise_repeat_call("smem_shm_init was already called (call smem_shm_uninit first)");
    WorldOptions options;
    options.api = "shm";
    options.store_url = configStoreIpPort;
    options.world_size = static_cast<int>(worldSize);
    options.rank = static_cast<int>(rankId);
    options.device = deviceId;
    options.start_server = effective.startConfigStoreServer && rankId == 0;
    options.deadline = memloom::Deadline::after(seconds(effective.shmInitTimeout));
    shm.world = SmemWorld::join(options);
    shm.config = effective;
  });
}

void smem_shm_uninit(uint32_t flags) {
  facade_call("smem_shm_uninit", [&] {
    (void)flags;  // reserved
    ShmState& shm = state();
    std::map<const void*, std::shared_ptr<ShmObject>> objects;
    std::shared_ptr<SmemWorld> world;
    {
      std::lock_guard<std::mutex> lock(shm.mutex);
      if (!shm.world) raise_not_initialized("smem_shm_init has not been called");
      objects.swap(shm.objects);
      world.swap(shm.world);
    }
    objects.clear();  // destroyed outside the lock, before the world they live in
    world.reset();
  });
}

uint32_t smem_shm_query_support_data_operation(void) {
  return SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA;
}

smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId, uint64_t symmetricSize,
                           smem_shm_data_op_type dataOpType, uint32_t flags, void** gva) {
  return facade_value<smem_shm_t>("smem_shm_create", nullptr, [&]() -> smem_shm_t {
    MEMLOOM_CHECK_ARG(gva != nullptr, "gva is null");
    ShmState& shm = state();
    std::shared_ptr<SmemWorld> world;
    ShmCreateArgs args;
    uint64_t instance = 0;
    {
      std::lock_guard<std::mutex> lock(shm.mutex);
      if (!shm.world) raise_not_initialized("smem_shm_init has not been called");
      for (const auto& [handle, object] : shm.objects) {
        MEMLOOM_CHECK_ARG(object->id() != id,
                          "shm object id " + std::to_string(id) + " is in use (destroy it first)");
      }
      MEMLOOM_CHECK_ARG(rankSize <= static_cast<uint32_t>(shm.world->size()),
                        "rankSize " + std::to_string(rankSize) + " exceeds the world size " +
                            std::to_string(shm.world->size()));
      world = shm.world;
      args.create_timeout = seconds(shm.config.shmCreateTimeout);
      args.control_timeout = seconds(shm.config.controlOperationTimeout);
      instance = shm.instances[id]++;
    }
    args.id = id;
    args.rank_size = to_int(rankSize, "rankSize");
    args.rank = to_int(rankId, "rankId");
    args.symmetric_size = symmetricSize;
    args.data_ops = static_cast<uint32_t>(dataOpType);
    args.flags = flags;
    std::shared_ptr<ShmObject> object = ShmObject::create(*world, args, instance);
    void* handle = fresh_handle();
    {
      std::lock_guard<std::mutex> lock(shm.mutex);
      if (shm.world != world)
        raise(Status::kCommunication, "smem_shm_uninit ran during smem_shm_create");
      shm.objects.emplace(handle, object);
    }
    *gva = object->gva();
    return handle;
  });
}

uint64_t smem_shm_get_symmetric_size(smem_shm_t handle) {
  return facade_value<uint64_t>("smem_shm_get_symmetric_size", 0,
                                [&] { return lookup(handle)->symmetric_size(); });
}

int32_t smem_shm_destroy(smem_shm_t handle, uint32_t flags) {
  return facade_call("smem_shm_destroy", [&] {
    (void)flags;  // reserved
    std::shared_ptr<ShmObject> object = lookup(handle);
    ShmState& shm = state();
    std::lock_guard<std::mutex> lock(shm.mutex);
    shm.objects.erase(handle);
  });
}

int32_t smem_shm_set_extra_context(smem_shm_t handle, const void* context, uint32_t size) {
  return facade_call("smem_shm_set_extra_context",
                     [&] { lookup(handle)->set_extra_context(context, size); });
}

void* smem_shm_extra_context_addr(smem_shm_t handle, uint32_t rank) {
  return facade_value<void*>("smem_shm_extra_context_addr", nullptr, [&] {
    return lookup(handle)->extra_context_address(to_int(rank, "rank"));
  });
}

uint32_t smem_shm_extra_context_size(smem_shm_t handle, uint32_t rank) {
  return facade_value<uint32_t>("smem_shm_extra_context_size", UINT32_MAX, [&] {
    return lookup(handle)->extra_context_size(to_int(rank, "rank"));
  });
}

uint32_t smem_shm_get_global_rank(smem_shm_t handle) {
  return facade_value<uint32_t>("smem_shm_get_global_rank", UINT32_MAX,
                                [&] { return static_cast<uint32_t>(lookup(handle)->rank()); });
}

uint32_t smem_shm_get_global_rank_size(smem_shm_t handle) {
  return facade_value<uint32_t>("smem_shm_get_global_rank_size", UINT32_MAX,
                                [&] { return static_cast<uint32_t>(lookup(handle)->size()); });
}

int32_t smem_shm_control_barrier(smem_shm_t handle) {
  return facade_call("smem_shm_control_barrier", [&] { lookup(handle)->barrier(); });
}

int32_t smem_shm_control_allgather(smem_shm_t handle, const char* sendBuf, uint32_t sendSize,
                                   char* recvBuf, uint32_t recvSize) {
  return facade_call("smem_shm_control_allgather",
                     [&] { lookup(handle)->allgather(sendBuf, sendSize, recvBuf, recvSize); });
}

int32_t smem_shm_subgroup_barrier(smem_shm_t handle, const char* key, uint32_t rankSize,
                                  uint32_t rankId) {
  return facade_call("smem_shm_subgroup_barrier", [&] {
    auto object = lookup(handle);
    MEMLOOM_CHECK_ARG(key != nullptr, "key is null");
    object->subgroup_barrier(key, to_int(rankSize, "rankSize"), to_int(rankId, "rankId"));
  });
}

int32_t smem_shm_subgroup_allgather(smem_shm_t handle, const char* key, uint32_t rankSize,
                                    uint32_t rankId, const char* sendBuf, uint32_t sendSize,
                                    char* recvBuf, uint32_t recvSize) {
  return facade_call("smem_shm_subgroup_allgather", [&] {
    auto object = lookup(handle);
    MEMLOOM_CHECK_ARG(key != nullptr, "key is null");
    object->subgroup_allgather(key, to_int(rankSize, "rankSize"), to_int(rankId, "rankId"), sendBuf,
                               sendSize, recvBuf, recvSize);
  });
}

int32_t smem_shm_topology_can_reach(smem_shm_t handle, uint32_t remoteRank, uint32_t* reachInfo) {
  return facade_call("smem_shm_topology_can_reach", [&] {
    auto object = lookup(handle);
    MEMLOOM_CHECK_ARG(reachInfo != nullptr, "reachInfo is null");
    *reachInfo = object->reach(to_int(remoteRank, "remoteRank"));
  });
}

int32_t smem_shm_atomic_alloc_value(smem_shm_t handle, uint32_t limit, int32_t* value) {
  return facade_call("smem_shm_atomic_alloc_value", [&] {
    auto object = lookup(handle);
    MEMLOOM_CHECK_ARG(value != nullptr, "value is null");
    *value = object->alloc_value(limit);
  });
}

int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value) {
  return facade_call("smem_shm_atomic_release_value",
                     [&] { lookup(handle)->release_value(value); });
}

int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int)) {
  return facade_call("smem_shm_register_exit", [&] { lookup(handle)->register_exit(exit); });
}

void smem_shm_global_exit(smem_shm_t handle, int status) {
  facade_call("smem_shm_global_exit", [&] { lookup(handle)->global_exit(status); });
}

}  // extern "C"
