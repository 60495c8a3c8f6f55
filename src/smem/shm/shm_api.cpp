// The MemFabric SHM facade: argument checks, the process's shm state, and the handle registry.
// Every entry point runs through facade_call / facade_value (src/smem/smem_facade.h).
#include <memory>

#include "smem/host/smem_shm.h"
#include "src/base/enum_bits.h"
#include "src/core/platform_loader.h"
#include "src/smem/handle_registry.h"
#include "src/smem/shm/shm_object.h"
#include "src/smem/smem_facade.h"
#include "src/smem/smem_world.h"

namespace memloom::smem {
namespace {

using ShmSession = WorldSession<smem_shm_config_t>;

using ShmRegistry = HandleRegistry<ShmObject, ShmSession>;

ShmRegistry& registry() {
  static constexpr const char* kNotLive =
      "the handle is not a live shm object (never created or already destroyed)";
  // Never destroyed: an exit function run by smem_shm_global_exit may call exit() on any thread.
  static auto* shm =
      new ShmRegistry(HandleTexts{"the shm handle is null", kNotLive, kNotLive,
                                  "smem_shm_init has not been called", "shm object",
                                  /*handles_need_session=*/true, SMEM_NOT_INITIALIZED});
  return *shm;
}

void check_timeout(const char* name, uint32_t value) {
  MEMLOOM_CHECK_ARG(value >= 1, std::string(name) + " must be at least 1 second");
}

std::shared_ptr<ShmObject> lookup(smem_shm_t handle) {
  return registry().lookup(handle);
}

// MemFabric checks a null handle and the pointer arguments before whether smem_shm_init ran (so a
// call with a bad argument is SMEM_INVALID_PARAM even then), and the handle's liveness after it.
void check_handle_not_null(smem_shm_t handle) {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the shm handle is null");
}

int to_int(uint32_t value, const char* name) {
  MEMLOOM_CHECK_ARG(value <= static_cast<uint32_t>(INT32_MAX), std::string(name) + " is too large");
  return static_cast<int>(value);
}

}  // namespace
}  // namespace memloom::smem

using namespace memloom::smem;

extern "C" {

int32_t smem_shm_config_init(smem_shm_config_t* config) {
  return facade_call("smem_shm_config_init", [&] {
    MEMLOOM_CHECK_ARG(config != nullptr, "config is null");
    *config = smem_shm_config_t{};
    config->shmInitTimeout = kDefaultTimeoutSeconds;
    config->shmCreateTimeout = kDefaultTimeoutSeconds;
    config->controlOperationTimeout = kDefaultTimeoutSeconds;
    config->startConfigStoreServer = true;
    config->flags = 0;
  });
}

int32_t smem_shm_init(const char* configStoreIpPort, uint32_t worldSize, uint32_t rankId,
                      uint16_t deviceId, smem_shm_config_t* config) {
  return facade_call("smem_shm_init", [&] {
    MEMLOOM_CHECK_ARG(configStoreIpPort != nullptr, "configStoreIpPort is null");
    check_rank_count("worldSize", worldSize);
    MEMLOOM_CHECK_ARG(rankId < worldSize, "rankId " + std::to_string(rankId) +
                                              " is out of range [0, " + std::to_string(worldSize) +
                                              ")");
    smem_shm_config_t effective;
    smem_shm_config_init(&effective);
    if (config != nullptr) effective = *config;
    check_timeout("shmInitTimeout", effective.shmInitTimeout);
    check_timeout("shmCreateTimeout", effective.shmCreateTimeout);
    check_timeout("controlOperationTimeout", effective.controlOperationTimeout);

    registry().open(
        "smem_shm_init: already initialised; this call changes nothing", [&](ShmSession& session) {
          WorldOptions options;
          options.api = "shm";
          options.store_url = configStoreIpPort;
          options.world_size = static_cast<int>(worldSize);
          options.rank = static_cast<int>(rankId);
          options.device = deviceId;
          options.start_server = effective.startConfigStoreServer && rankId == 0;
          // Started under the lock: a concurrent *_init's join does not eat into it.
          options.deadline = memloom::Deadline::after(config_seconds(effective.shmInitTimeout));
          session.world = SmemWorld::join(options);
          session.config = effective;
        });
  });
}

void smem_shm_uninit(uint32_t flags) {
  facade_call("smem_shm_uninit", [&] {
    (void)flags;  // reserved
    registry().close();
  });
}

uint32_t smem_shm_query_support_data_operation(void) {
  return SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA;
}

smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId, uint64_t symmetricSize,
                           smem_shm_data_op_type dataOpType, uint32_t flags, void** gva) {
  return facade_value<smem_shm_t>("smem_shm_create", nullptr, [&]() -> smem_shm_t {
    MEMLOOM_CHECK_ARG(gva != nullptr, "gva is null");
    std::shared_ptr<SmemWorld> world;
    // Declared after `world`: released before the world it lives in.
    std::shared_ptr<ShmObject> object;
    ShmCreateArgs args;
    void* handle = registry().create(
        id,
        [&](const ShmSession& session) {
          MEMLOOM_CHECK_ARG(rankSize <= static_cast<uint32_t>(session.world->size()),
                            "rankSize " + std::to_string(rankSize) + " exceeds the world size " +
                                std::to_string(session.world->size()));
          world = session.world;
          args.create_timeout = config_seconds(session.config.shmCreateTimeout);
          args.control_timeout = config_seconds(session.config.controlOperationTimeout);
        },
        [&](uint64_t instance) {
          args.id = id;
          args.rank_size = to_int(rankSize, "rankSize");
          args.rank = to_int(rankId, "rankId");
          args.symmetric_size = symmetricSize;
          // As bits: an unknown bit is a value outside the enum's range, which must not be
          // read as the enum (src/base/enum_bits.h).
          args.data_ops = static_cast<uint32_t>(memloom::base::enum_bits(dataOpType));
          args.flags = flags;
          object = ShmObject::create(*world, args, instance);
          return object;
        },
        "smem_shm_uninit ran during smem_shm_create");
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
    registry().remove(handle);
  });
}

int32_t smem_shm_set_extra_context(smem_shm_t handle, const void* context, uint32_t size) {
  return facade_call("smem_shm_set_extra_context", [&] {
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(context != nullptr, "context is null");
    MEMLOOM_CHECK_ARG(size > 0 && size <= SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX,
                      "context size " + std::to_string(size) + " is out of range [1, " +
                          std::to_string(SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX) + "]");
    lookup(handle)->set_extra_context(context, size);
  });
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
  return facade_call("smem_shm_control_allgather", [&] {
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(sendBuf != nullptr && recvBuf != nullptr, "sendBuf or recvBuf is null");
    MEMLOOM_CHECK_ARG(sendSize > 0, "sendSize must be positive");
    lookup(handle)->allgather(sendBuf, sendSize, recvBuf, recvSize);
  });
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
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(reachInfo != nullptr, "reachInfo is null");
    *reachInfo = lookup(handle)->reach(to_int(remoteRank, "remoteRank"));
  });
}

int32_t smem_shm_atomic_alloc_value(smem_shm_t handle, uint32_t limit, uint32_t* value) {
  return facade_call("smem_shm_atomic_alloc_value", [&] {
    check_handle_not_null(handle);
    registry().require_open();
    MEMLOOM_CHECK_ARG(value != nullptr, "value is null");
    *value = static_cast<uint32_t>(lookup(handle)->alloc_value(limit));
  });
}

int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value) {
  return facade_call("smem_shm_atomic_release_value",
                     [&] { lookup(handle)->release_value(value); });
}

int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int)) {
  return facade_call("smem_shm_register_exit", [&] {
    MEMLOOM_CHECK_ARG(exit != nullptr, "the exit function is null");
    lookup(handle)->register_exit(exit);
  });
}

void smem_shm_global_exit(smem_shm_t handle, int status) {
  facade_call("smem_shm_global_exit", [&] { lookup(handle)->global_exit(status); });
}

}  // extern "C"
