// The MemFabric BM facade: argument checks, the process's BM state and the handle registry.
// Every entry point runs through facade_call / facade_value (src/smem/smem_facade.h).
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "smem/host/smem_bm.h"
#include "src/smem/bm/bm_object.h"
#include "src/smem/smem_facade.h"
#include "src/smem/smem_world.h"
#include "src/smem/store_tls.h"

namespace memloom::smem {
namespace {

struct BmState {
  std::mutex mutex;
  std::shared_ptr<SmemWorld> world;
  smem_bm_config_t config{};
  std::map<const void*, std::shared_ptr<BmObject>> objects;
  std::map<uint32_t, uint64_t> instances;  // objects created per id, for fresh store keys
};

BmState& state() {
  static auto* bm_state = new BmState();  // never destroyed: objects may outlive static teardown
  return *bm_state;
}

std::chrono::milliseconds seconds(uint32_t value) {
  return std::chrono::milliseconds(static_cast<int64_t>(value) * 1000);
}

std::shared_ptr<SmemWorld> world_with_rank(BmState& bm) {
  if (!bm.world) raise_not_initialized("smem_bm_init has not been called");
  if (!bm.world->has_rank()) {
    raise(Status::kNotSupported, "this process only runs the config store (startConfigStoreOnly)");
  }
  return bm.world;
}

std::shared_ptr<BmObject> lookup(smem_bm_t handle) {
  MEMLOOM_CHECK_ARG(handle != nullptr, "the BM handle is null");
  BmState& bm = state();
  std::lock_guard<std::mutex> lock(bm.mutex);
  if (!bm.world) raise_not_initialized("smem_bm_init has not been called");
  auto found = bm.objects.find(handle);
  MEMLOOM_CHECK_ARG(found != bm.objects.end(),
                    "the handle is not a live BM object (never created or already destroyed)");
  return found->second;
}

void check_string_field(const char* field, const char* value, size_t capacity) {
  MEMLOOM_CHECK_ARG(std::memchr(value, '\0', capacity) != nullptr,
                    std::string(field) + " is not NUL-terminated within its " +
                        std::to_string(capacity) + " bytes");
}

smem_bm_t create_object(uint32_t id, BmCreateArgs args) {
  BmState& bm = state();
  std::shared_ptr<SmemWorld> world;
  uint64_t instance = 0;
  {
    std::lock_guard<std::mutex> lock(bm.mutex);
    world = world_with_rank(bm);
    for (const auto& [handle, object] : bm.objects) {
      MEMLOOM_CHECK_ARG(object->id() != id,
                        "BM object id " + std::to_string(id) + " is in use (destroy it first)");
    }
    args.create_timeout = seconds(bm.config.createTimeout);
    args.control_timeout = seconds(bm.config.controlOperationTimeout);
    instance = bm.instances[id]++;
  }
  args.id = id;
  std::shared_ptr<BmObject> object = BmObject::create(*world, args, instance);
  std::lock_guard<std::mutex> lock(bm.mutex);
  if (bm.world != world) raise(Status::kCommunication, "smem_bm_uninit ran during smem_bm_create");
  void* handle = fresh_handle();
  bm.objects.emplace(handle, object);
  return handle;
}

// Enum parameters of the C API: a C caller may pass any int, and C++ may not load a value outside
// the enum's range as the enum type, so the bits are read as an integer and checked first.
template <typename Enum>
int enum_bits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C API enums are int-sized");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
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

void copy_with_flags(smem_bm_t handle, const std::vector<CopyEntry>& entries, smem_bm_copy_type t,
                     uint32_t flags) {
  lookup(handle)->copy(entries, t, (flags & ASYNC_COPY_FLAG) != 0);
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
    *config = smem_bm_config_t{};
    config->initTimeout = 120;
    config->createTimeout = 120;
    config->controlOperationTimeout = 120;
    config->startConfigStoreServer = true;
    config->unifiedAddressSpace = true;
  });
}

int32_t smem_bm_init(const char* storeURL, uint32_t worldSize, uint16_t deviceId,
                     const smem_bm_config_t* config) {
  return facade_call("smem_bm_init", [&] {
    MEMLOOM_CHECK_ARG(storeURL != nullptr, "storeURL is null");
    MEMLOOM_CHECK_ARG(worldSize >= 1 && worldSize <= SMEM_WORLD_SIZE_MAX,
                      "worldSize " + std::to_string(worldSize) + " is out of range [1, " +
                          std::to_string(SMEM_WORLD_SIZE_MAX) + "]");
    smem_bm_config_t effective;
    smem_bm_config_init(&effective);
    if (config != nullptr) effective = *config;
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

    BmState& bm = state();
    std::lock_guard<std::mutex> lock(bm.mutex);
    if (bm.world) raise_repeat_call("smem_bm_init was already called (call smem_bm_uninit first)");
    if (effective.startConfigStoreOnly) {
      bm.world = SmemWorld::serve_only(storeURL, store_tls);
    } else {
      WorldOptions options;
      options.api = "bm";
      options.store_url = storeURL;
      options.world_size = static_cast<int>(worldSize);
      options.rank = effective.autoRanking ? -1 : effective.rankId;
      options.device = deviceId;
      options.start_server =
          effective.startConfigStoreServer && (effective.autoRanking || effective.rankId == 0);
      options.deadline = memloom::Deadline::after(seconds(effective.initTimeout));
      options.store_tls = store_tls;
      bm.world = SmemWorld::join(options);
    }
    bm.config = effective;
  });
}

void smem_bm_uninit(uint32_t flags) {
  facade_call("smem_bm_uninit", [&] {
    (void)flags;  // reserved
    BmState& bm = state();
    std::map<const void*, std::shared_ptr<BmObject>> objects;
    std::shared_ptr<SmemWorld> world;
    {
      std::lock_guard<std::mutex> lock(bm.mutex);
      if (!bm.world) raise_not_initialized("smem_bm_init has not been called");
      objects.swap(bm.objects);
      world.swap(bm.world);
    }
    objects.clear();  // destroyed outside the lock, before the world they live in
    world.reset();
  });
}

uint32_t smem_bm_get_rank_id(void) {
  return facade_value<uint32_t>("smem_bm_get_rank_id", UINT32_MAX, [&] {
    BmState& bm = state();
    std::lock_guard<std::mutex> lock(bm.mutex);
    return static_cast<uint32_t>(world_with_rank(bm)->rank());
  });
}

smem_bm_t smem_bm_create(uint32_t id, uint32_t memberSize, smem_bm_data_op_type dataOpType,
                         uint64_t localDRAMSize, uint64_t localHBMSize, uint32_t flags) {
  return facade_value<smem_bm_t>("smem_bm_create", nullptr, [&] {
    MEMLOOM_CHECK_ARG(memberSize >= 1 && memberSize <= SMEM_WORLD_SIZE_MAX,
                      "memberSize " + std::to_string(memberSize) + " is out of range [1, " +
                          std::to_string(SMEM_WORLD_SIZE_MAX) + "]");
    BmCreateArgs args;
    args.member_size = static_cast<int>(memberSize);
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
      BmState& bm = state();
      std::lock_guard<std::mutex> lock(bm.mutex);
      args.member_size = world_with_rank(bm)->size();
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
  facade_call("smem_bm_destroy", [&] {
    std::shared_ptr<BmObject> object = lookup(handle);
    BmState& bm = state();
    {
      std::lock_guard<std::mutex> lock(bm.mutex);
      bm.objects.erase(handle);
    }
    object.reset();  // the last reference unless another thread is still inside a call
  });
}

int32_t smem_bm_join(smem_bm_t handle, uint32_t flags, void** localGvaAddress) {
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
    MEMLOOM_CHECK_ARG(params != nullptr, "params is null");
    copy_with_flags(handle, {CopyEntry{params->src, params->dest, params->dataSize}},
                    checked_copy_type(t), flags);
  });
}

int32_t smem_bm_copy_batch(smem_bm_t handle, smem_batch_copy_params* params, smem_bm_copy_type t,
                           uint32_t flags) {
  return facade_call("smem_bm_copy_batch", [&] {
    MEMLOOM_CHECK_ARG(params != nullptr, "params is null");
    MEMLOOM_CHECK_ARG(params->batchSize >= 1, "batchSize is 0");
    MEMLOOM_CHECK_ARG(params->sources != nullptr && params->destinations != nullptr &&
                          params->dataSizes != nullptr,
                      "sources, destinations or dataSizes is null");
    std::vector<CopyEntry> entries(params->batchSize);
    for (uint32_t i = 0; i < params->batchSize; ++i) {
      entries[i] = CopyEntry{params->sources[i], params->destinations[i],
                             static_cast<size_t>(params->dataSizes[i])};
    }
    copy_with_flags(handle, entries, checked_copy_type(t), flags);
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
  return facade_value<uint32_t>("smem_bm_get_rank_id_by_gva", UINT32_MAX, [&] {
    auto object = lookup(handle);
    int rank = object->rank_of(gva);
    MEMLOOM_CHECK_ARG(
        rank >= 0, "the address is outside the GVA of BM object " + std::to_string(object->id()));
    return static_cast<uint32_t>(rank);
  });
}

uint64_t smem_bm_get_local_mem_size(smem_bm_t handle) {
  return smem_bm_get_local_mem_size_by_mem_type(handle, SMEM_MEM_TYPE_DEVICE);
}

void* smem_bm_ptr(smem_bm_t handle, uint16_t peerRankId) {
  return smem_bm_ptr_by_mem_type(handle, SMEM_MEM_TYPE_DEVICE, peerRankId);
}

int32_t smem_bm_register_user_mem(smem_bm_t handle, uint64_t addr, uint64_t size) {
  return facade_call("smem_bm_register_user_mem", [&] {
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
