// The MemFabric BM facade: argument checks, the process's BM state and the handle registry.
// Every entry point runs through facade_call / facade_value (src/smem/smem_facade.h).
#include <cstring>
#include <memory>

#include "smem/host/smem_bm.h"
#include "src/base/enum_bits.h"
#include "src/smem/bm/bm_object.h"
#include "src/smem/handle_registry.h"
#include "src/smem/smem_facade.h"
#include "src/smem/smem_world.h"
#include "src/smem/store_tls.h"

namespace memloom::smem {
namespace {

using base::enum_bits;

using BmSession = WorldSession<smem_bm_config_t>;

using BmRegistry = HandleRegistry<BmObject, BmSession>;

BmRegistry& registry() {
  static constexpr const char* kNotLive =
      "the handle is not a live BM object (never created or already destroyed)";
  // Never destroyed: objects may outlive static teardown.
  static auto* bm = new BmRegistry(HandleTexts{
      "the BM handle is null", kNotLive, kNotLive, "smem_bm_init has not been called", "BM object",
      /*handles_need_session=*/true, SMEM_NOT_INITIALIZED});
  return *bm;
}

std::shared_ptr<SmemWorld> world_with_rank(const BmSession& session) {
  if (!session.world->has_rank()) {
    raise(Status::kNotSupported, "this process only runs the config store (startConfigStoreOnly)");
  }
  return session.world;
}

std::shared_ptr<SmemWorld> world_with_rank(const BmRegistry::Lock& held) {
  return world_with_rank(registry().open_session(held));
}

std::shared_ptr<BmObject> lookup(smem_bm_t handle) {
  return registry().lookup(handle);
}

// MemFabric checks a null handle (and the pointer arguments) before whether smem_bm_init ran.
void check_handle_not_null(smem_bm_t handle) {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the BM handle is null");
}

void check_string_field(const char* field, const char* value, size_t capacity) {
  MEMLOOM_CHECK_ARG(std::memchr(value, '\0', capacity) != nullptr,
                    std::string(field) + " is not NUL-terminated within its " +
                        std::to_string(capacity) + " bytes");
}

smem_bm_t create_object(uint32_t id, BmCreateArgs args) {
  std::shared_ptr<SmemWorld> world;  // outlives the object when the registry refuses it
  args.id = id;
  return registry().create(
      id,
      [&](const BmSession& session) {
        // After the id check, which cannot fail first: a session without a rank has no objects.
        world = world_with_rank(session);
        args.create_timeout = config_seconds(session.config.createTimeout);
        args.control_timeout = config_seconds(session.config.controlOperationTimeout);
      },
      [&](uint64_t instance) { return BmObject::create(*world, args, instance); },
      "smem_bm_uninit ran during smem_bm_create");
}

smem_bm_copy_type checked_copy_type(const smem_bm_copy_type& type) {
  const int bits = enum_bits(type);
  MEMLOOM_CHECK_ARG(bits >= 0 && bits < SMEMB_COPY_BUTT,
                    "copy type " + std::to_string(bits) + " is not a smem_bm_copy_type (0 .. " +
                        std::to_string(static_cast<int>(SMEMB_COPY_AUTO)) + ")");
  return static_cast<smem_bm_copy_type>(bits);
}

smem_bm_mem_type checked_mem_type(const smem_bm_mem_type& type) {
  const int bits = enum_bits(type);
  MEMLOOM_CHECK_ARG(bits >= 0 && bits < SMEM_MEM_TYPE_BUTT,
                    "memType " + std::to_string(bits) + " is not a smem_bm_mem_type");
  return static_cast<smem_bm_mem_type>(bits);
}

}  // namespace
}  // namespace memloom::smem

using memloom::raise;
using memloom::Status;
using namespace memloom::smem;

extern "C" {

int32_t smem_bm_config_init(smem_bm_config_t* config) {
  return facade_call("smem_bm_config_init", [&] {
    MEMLOOM_CHECK_ARG(config != nullptr, "config is null");
    // MemFabric's defaults, field by field; the rest (hcomUrl, both TLS configs) is zeroed.
    *config = smem_bm_config_t{};
    config->initTimeout = kDefaultTimeoutSeconds;
    config->createTimeout = kDefaultTimeoutSeconds;
    config->controlOperationTimeout = kDefaultTimeoutSeconds;
    config->startConfigStoreServer = true;
    config->startConfigStoreOnly = false;
    config->dynamicWorldSize = false;
    config->unifiedAddressSpace = true;
    config->autoRanking = true;
    config->rankId = UINT16_MAX;
    config->flags = 0;
  });
}

int32_t smem_bm_init(const char* storeURL, uint32_t worldSize, uint16_t deviceId,
                     const smem_bm_config_t* config) {
  return facade_call("smem_bm_init", [&] {
    MEMLOOM_CHECK_ARG(storeURL != nullptr, "storeURL is null");
    check_rank_count("worldSize", worldSize);
    smem_bm_config_t effective;
    smem_bm_config_init(&effective);
    if (config != nullptr) effective = *config;
    MEMLOOM_CHECK_ARG(effective.unifiedAddressSpace,
                      "unifiedAddressSpace must be true (memloom's GVA is one address space)");
    MEMLOOM_CHECK_ARG(effective.initTimeout >= 1 && effective.createTimeout >= 1 &&
                          effective.controlOperationTimeout >= 1,
                      "initTimeout, createTimeout and controlOperationTimeout must be >= 1 second");
    MEMLOOM_CHECK_ARG(
        effective.autoRanking || effective.startConfigStoreOnly || effective.rankId < worldSize,
        "rankId " + std::to_string(effective.rankId) + " is out of range [0, " +
            std::to_string(worldSize) + ")");
    check_string_field("hcomUrl", effective.hcomUrl, sizeof(effective.hcomUrl));
    if (effective.hcomTlsConfig.tlsEnable) {
      raise(Status::kNotImplemented,
            "TLS for the transport (hcomTlsConfig) is not implemented yet");
    }
    // Without storeTlsConfig.tlsEnable the process-wide setting (smem_set_conf_store_tls) applies.
    memloom::store::TlsSetting store_tls;
    if (effective.storeTlsConfig.tlsEnable) {
      store_tls = memloom::store::TlsSetting::use(tls_config_from(effective.storeTlsConfig));
    }

    registry().open(
        "smem_bm_init: already initialised; this call changes nothing", [&](BmSession& session) {
          if (effective.startConfigStoreOnly) {
            session.world = SmemWorld::serve_only(storeURL, store_tls);
          } else {
            WorldOptions options;
            options.api = "bm";
            options.store_url = storeURL;
            options.world_size = static_cast<int>(worldSize);
            options.rank = effective.autoRanking ? -1 : effective.rankId;
            options.device = deviceId;
            options.start_server = effective.startConfigStoreServer &&
                                   (effective.autoRanking || effective.rankId == 0);
            options.deadline = memloom::Deadline::after(config_seconds(effective.initTimeout));
            options.store_tls = store_tls;
            session.world = SmemWorld::join(options);
          }
          session.config = effective;
        });
  });
}

void smem_bm_uninit(uint32_t flags) {
  facade_call("smem_bm_uninit", [&] {
    (void)flags;  // reserved
    registry().close();
  });
}

uint32_t smem_bm_get_rank_id(void) {
  return facade_value<uint32_t>("smem_bm_get_rank_id", UINT32_MAX, [&] {
    BmRegistry::Lock held = registry().lock();
    return static_cast<uint32_t>(world_with_rank(held)->rank());
  });
}

smem_bm_t smem_bm_create(uint32_t id, uint32_t memberSize, smem_bm_data_op_type dataOpType,
                         uint64_t localDRAMSize, uint64_t localHBMSize, uint32_t flags) {
  return facade_value<smem_bm_t>("smem_bm_create", nullptr, [&] {
    (void)memberSize;  // reserved, as published: MemFabric ignores it (its examples pass 0)
    BmCreateArgs args;
    {
      BmRegistry::Lock held = registry().lock();
      args.member_size = world_with_rank(held)->size();
    }
    args.data_ops = static_cast<uint32_t>(enum_bits(dataOpType));
    args.local_dram = localDRAMSize;
    args.local_hbm = localHBMSize;
    args.flags = flags;
    return create_object(id, args);
  });
}

smem_bm_t smem_bm_create2(uint32_t id, const smem_bm_create_option_t* option) {
  return facade_value<smem_bm_t>("smem_bm_create2", nullptr, [&] {
    MEMLOOM_CHECK_ARG(option != nullptr, "option is null");
    check_string_field("tag", option->tag, sizeof(option->tag));
    check_string_field("tagOpInfo", option->tagOpInfo, sizeof(option->tagOpInfo));
    MEMLOOM_CHECK_ARG(option->dramShmFd <= 0,
                      "dramShmFd must be -1 (or 0): memloom allocates host memory itself");
    BmCreateArgs args;
    {
      BmRegistry::Lock held = registry().lock();
      args.member_size = world_with_rank(held)->size();
    }
    args.data_ops = static_cast<uint32_t>(enum_bits(option->dataOpType));
    args.local_dram = option->localDRAMSize;
    args.local_hbm = option->localHBMSize;
    args.dram_stride = option->maxDramSize;
    args.hbm_stride = option->maxHbmSize;
    args.flags = option->flags;
    return create_object(id, args);
  });
}

void smem_bm_destroy(smem_bm_t handle) {
  facade_call("smem_bm_destroy", [&] { registry().remove(handle); });
}

// Parenthesised: smem_bm_join is also the header's macro that picks the two- or three-argument
// form.
int32_t(smem_bm_join)(smem_bm_t handle, uint32_t flags, void** localGvaAddress) {
  return facade_call("smem_bm_join", [&] {
    (void)flags;  // reserved
    void* local = lookup(handle)->join();
    if (localGvaAddress != nullptr) *localGvaAddress = local;
  });
}

int32_t smem_bm_leave(smem_bm_t handle, uint32_t flags) {
  return facade_call("smem_bm_leave", [&] {
    (void)flags;  // reserved
    lookup(handle)->leave();
  });
}

int32_t smem_bm_copy(smem_bm_t handle, smem_copy_params* params, smem_bm_copy_type t,
                     uint32_t flags) {
  return facade_call("smem_bm_copy", [&] {
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(params != nullptr, "params is null");
    auto object = lookup(handle);
    object->copy({CopyEntry{params->src, params->dest, params->dataSize}}, checked_copy_type(t),
                 (flags & ASYNC_COPY_FLAG) != 0);
  });
}

int32_t smem_bm_copy_batch(smem_bm_t handle, smem_batch_copy_params* params, smem_bm_copy_type t,
                           uint32_t flags) {
  return facade_call("smem_bm_copy_batch", [&] {
    // MemFabric's order: the handle and params pointers, then init, then the handle, then the rest.
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(params != nullptr, "params is null");
    auto object = lookup(handle);
    MEMLOOM_CHECK_ARG(params->batchSize >= 1, "batchSize is 0");
    MEMLOOM_CHECK_ARG(params->sources != nullptr && params->destinations != nullptr &&
                          params->dataSizes != nullptr,
                      "sources, destinations or dataSizes is null");
    std::vector<CopyEntry> entries(params->batchSize);
    for (uint32_t i = 0; i < params->batchSize; ++i) {
      entries[i] = CopyEntry{params->sources[i], params->destinations[i],
                             static_cast<size_t>(params->dataSizes[i])};
    }
    object->copy(entries, checked_copy_type(t), (flags & ASYNC_COPY_FLAG) != 0);
  });
}

int32_t smem_bm_wait(smem_bm_t handle) {
  return facade_call("smem_bm_wait", [&] { lookup(handle)->wait(); });
}

uint64_t smem_bm_get_local_mem_size_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType) {
  return facade_value<uint64_t>("smem_bm_get_local_mem_size_by_mem_type", 0, [&] {
    return lookup(handle)->local_size(checked_mem_type(memType));
  });
}

void* smem_bm_ptr_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType, uint16_t peerRankId) {
  return facade_value<void*>("smem_bm_ptr_by_mem_type", nullptr, [&] {
    return lookup(handle)->slot(checked_mem_type(memType), peerRankId);
  });
}

uint32_t smem_bm_get_rank_id_by_gva(smem_bm_t handle, void* gva) {
  // MemFabric returns its error code cast to uint32_t, so callers compare against that.
  uint32_t rank = 0;
  const int32_t code = facade_call("smem_bm_get_rank_id_by_gva", [&] {
    auto object = lookup(handle);
    const int found = object->rank_of(gva);
    MEMLOOM_CHECK_ARG(
        found >= 0, "the address is outside the GVA of BM object " + std::to_string(object->id()));
    rank = static_cast<uint32_t>(found);
  });
  return code == SMEM_SUCCESS ? rank : static_cast<uint32_t>(code);
}

uint64_t smem_bm_get_local_mem_size(smem_bm_t handle) {
  return smem_bm_get_local_mem_size_by_mem_type(handle, SMEM_MEM_TYPE_DEVICE);
}

void* smem_bm_ptr(smem_bm_t handle, uint16_t peerRankId) {
  return smem_bm_ptr_by_mem_type(handle, SMEM_MEM_TYPE_DEVICE, peerRankId);
}

int32_t smem_bm_register_user_mem(smem_bm_t handle, uint64_t addr, uint64_t size) {
  return facade_call("smem_bm_register_user_mem", [&] {
    check_handle_not_null(handle);
    MEMLOOM_CHECK_ARG(addr != 0, "addr is 0");
    lookup(handle)->register_user_memory(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)),
                                         static_cast<size_t>(size));
  });
}

int32_t smem_bm_unregister_user_mem(smem_bm_t handle, uint64_t addr) {
  return facade_call("smem_bm_unregister_user_mem", [&] {
    lookup(handle)->unregister_user_memory(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)));
  });
}

}  // extern "C"
