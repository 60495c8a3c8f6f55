// The MemFabric TRANS C API: argument checks, the handle registry, and the mapping of errors to
// SMEM_* codes (through the smem facade wrapper, like every smem entry point). The work is in
// Engine.
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "smem/host/smem_trans.h"
#include "src/base/enum_bits.h"
#include "src/core/platform_loader.h"
#include "src/smem/handle_registry.h"
#include "src/smem/smem_error.h"
#include "src/smem/smem_facade.h"
#include "src/smem/trans/endpoint_address.h"
#include "src/smem/trans/stream_submit.h"
#include "src/smem/trans/trans_engine.h"

namespace {

using memloom::base::enum_bits;
using memloom::smem::kDefaultTimeoutSeconds;
using memloom::smem::kKnownBmDataOps;
using memloom::smem::trans::Direction;
using memloom::smem::trans::Engine;
using memloom::smem::trans::EngineOptions;
using memloom::smem::trans::TransferEntry;

constexpr uint32_t kDefaultTransDataOps = SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP;
constexpr uint32_t kNetworkDataOps = SMEMB_DATA_OP_HOST_RDMA | SMEMB_DATA_OP_HOST_TCP |
                                     SMEMB_DATA_OP_DEVICE_RDMA | SMEMB_DATA_OP_HOST_URMA;

// The session is only "smem_trans_init was called": engines stand alone. A namespace-scope
// object, so engines a caller never destroyed are still destroyed at exit.
memloom::smem::HandleRegistry<Engine, bool> g_engines(memloom::smem::HandleTexts{
    "handle is null", "handle is not a live transfer instance (never created, or destroyed)",
    "handle is not a live transfer instance (destroyed twice?)",
    "smem_trans_init has not been called (or smem_trans_uninit was)", nullptr,
    /*handles_need_session=*/false, SMEM_INVALID_PARAM});

// Every entry point that needs smem_trans_init: the shared facade wrapper (smem::guarded inside).
template <typename Body>
int32_t run_api(const char* function, Body&& body) {
  return memloom::smem::facade_call(function, [&] {
    g_engines.require_open();
    body();
  });
}

template <typename T, typename Body>
T run_api_value(const char* function, Body&& body) {
  return memloom::smem::facade_value<T>(function, T{}, [&] {
    g_engines.require_open();
    return body();
  });
}

std::shared_ptr<Engine> engine_of(smem_trans_t handle) {
  return g_engines.lookup(handle);
}

void check_flags(uint32_t flags) {
  MEMLOOM_CHECK_ARG(flags == 0, "flags are reserved and must be 0, got " + std::to_string(flags));
}

std::string check_peer_id(const char* unique_id) {
  MEMLOOM_CHECK_ARG(unique_id != nullptr, "remoteUniqueId is null");
  memloom::smem::trans::EndpointAddress::parse(unique_id);  // refuses malformed names up front
  return unique_id;
}

EngineOptions engine_options(const smem_trans_config_t* config) {
  MEMLOOM_CHECK_ARG(config != nullptr, "config is null");
  // A caller's out-of-range enum value must be refused, not assumed.
  const int role = enum_bits(config->role);
  MEMLOOM_CHECK_ARG(
      role == SMEM_TRANS_SENDER || role == SMEM_TRANS_RECEIVER || role == SMEM_TRANS_BOTH,
      "config.role must be SMEM_TRANS_SENDER, SMEM_TRANS_RECEIVER or SMEM_TRANS_BOTH, got " +
          std::to_string(role));
  MEMLOOM_CHECK_ARG(config->initTimeout > 0, "config.initTimeout must be at least 1 second");
  MEMLOOM_CHECK_ARG(config->flags == 0, "config.flags are reserved and must be 0, got " +
                                            std::to_string(config->flags));
  // 0 is the default (MemFabric's smem_trans_config_init leaves the field alone and its engine
  // never requires a bit): every path this build has.
  auto ops = static_cast<uint32_t>(enum_bits(config->dataOpType));
  if (ops == 0) ops = kDefaultTransDataOps;
  MEMLOOM_CHECK_ARG((ops & ~kKnownBmDataOps) == 0,
                    "config.dataOpType must be 0 or a combination of SMEMB_DATA_OP_* flags, got " +
                        std::to_string(ops));
  if (config->deviceId != UINT32_MAX) {
    int devices = memloom::core::platform().device_count();
    MEMLOOM_CHECK_ARG(config->deviceId < static_cast<uint32_t>(devices),
                      "config.deviceId " + std::to_string(config->deviceId) +
                          " is not a device (this process sees " + std::to_string(devices) + ")");
  }
  EngineOptions options;
  options.initiates = role == SMEM_TRANS_SENDER || role == SMEM_TRANS_BOTH;
  options.serves = role == SMEM_TRANS_RECEIVER || role == SMEM_TRANS_BOTH;
  options.timeout = memloom::smem::config_seconds(config->initTimeout);
  options.paths.direct = (ops & SMEMB_DATA_OP_SDMA) != 0;
  options.paths.network = (ops & kNetworkDataOps) != 0;
  options.start_store = config->startConfigServer;
  options.device = config->deviceId == UINT32_MAX ? -1 : static_cast<int>(config->deviceId);
  return options;
}

uint64_t address_value(const void* address) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address));
}

// " of entry N" for entry N of a batch, "" for a single transfer (index < 0). Built only for an
// error message: a batch checks 1024 entries per call.
std::string entry_name(int64_t index) {
  return index < 0 ? std::string() : " of entry " + std::to_string(index);
}

TransferEntry entry(const void* local, const void* remote, size_t bytes, int64_t index = -1) {
  MEMLOOM_CHECK_ARG(local != nullptr, "the local address" + entry_name(index) + " is null");
  MEMLOOM_CHECK_ARG(remote != nullptr, "the remote address" + entry_name(index) + " is null");
  MEMLOOM_CHECK_ARG(bytes > 0, "the data size" + entry_name(index) + " is 0");
  MEMLOOM_CHECK_ARG(
      address_value(local) <= UINT64_MAX - bytes && address_value(remote) <= UINT64_MAX - bytes,
      "the range" + entry_name(index) + " wraps around the address space");
  return TransferEntry{static_cast<char*>(const_cast<void*>(local)), address_value(remote), bytes};
}

std::vector<TransferEntry> batch(const void* const* locals, const void* const* remotes,
                                 const size_t* sizes, uint32_t count) {
  MEMLOOM_CHECK_ARG(locals != nullptr, "the local address array is null");
  MEMLOOM_CHECK_ARG(remotes != nullptr, "the remote address array is null");
  MEMLOOM_CHECK_ARG(sizes != nullptr, "the data size array is null");
  MEMLOOM_CHECK_ARG(count > 0, "batchSize is 0");
  std::vector<TransferEntry> entries;
  entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    entries.push_back(entry(locals[i], remotes[i], sizes[i], i));
  }
  return entries;
}

void transfer_now(smem_trans_t handle, Direction direction, const char* peer,
                  std::vector<TransferEntry> entries, uint32_t flags) {
  auto engine = engine_of(handle);
  std::string peer_id = check_peer_id(peer);
  check_flags(flags);
  engine->transfer(direction, peer_id, entries);
}

void transfer_in_stream(smem_trans_t handle, Direction direction, const char* peer,
                        std::vector<TransferEntry> entries, void* stream, uint32_t flags) {
  auto engine = engine_of(handle);
  std::string peer_id = check_peer_id(peer);
  check_flags(flags);
  MEMLOOM_CHECK_ARG(stream != nullptr, "stream is null");
  engine->check_initiator();
  engine->check_peer(peer_id);
  memloom::smem::trans::submit_in_stream_order(
      stream,
      [engine, direction, peer_id, entries = std::move(entries)] {
        engine->transfer(direction, peer_id, entries);
      },
      engine->deadline());
}

}  // namespace

extern "C" {

int32_t smem_trans_config_init(smem_trans_config_t* config) {
  return memloom::smem::guarded("smem_trans_config_init", [&] {
    MEMLOOM_CHECK_ARG(config != nullptr, "config is null");
    config->role = SMEM_TRANS_SENDER;
    config->initTimeout = kDefaultTimeoutSeconds;
    config->deviceId = UINT32_MAX;
    config->flags = 0;
    config->dataOpType = static_cast<smem_bm_data_op_type>(0);  // the default: every path
    config->startConfigServer = false;
  });
}

int32_t smem_trans_init(const smem_trans_config_t* config) {
  return memloom::smem::guarded("smem_trans_init", [&] {
    engine_options(config);
    auto held = g_engines.lock();
    g_engines.session(held) = true;
  });
}

void smem_trans_uninit(uint32_t flags) {
  (void)memloom::smem::guarded("smem_trans_uninit", [&] {
    (void)flags;  // reserved
    g_engines.close([](Engine& engine) { engine.shutdown(); });
  });
}

smem_trans_t smem_trans_create(const char* storeUrl, const char* uniqueId,
                               const smem_trans_config_t* config) {
  return run_api_value<smem_trans_t>("smem_trans_create", [&]() -> smem_trans_t {
    MEMLOOM_CHECK_ARG(storeUrl != nullptr, "storeUrl is null");
    MEMLOOM_CHECK_ARG(uniqueId != nullptr, "uniqueId is null");
    EngineOptions options = engine_options(config);
    return g_engines.add(Engine::create(storeUrl, uniqueId, options));
  });
}

void smem_trans_destroy(smem_trans_t handle, uint32_t flags) {
  (void)memloom::smem::guarded("smem_trans_destroy", [&] {
    (void)flags;  // reserved
    // Transfers still queued on streams keep the engine alive; they fail as "destroyed".
    g_engines.remove(handle)->shutdown();
  });
}

void* smem_trans_malloc(smem_trans_t handle, size_t capacity) {
  return run_api_value<void*>("smem_trans_malloc", [&] {
    auto engine = engine_of(handle);
    MEMLOOM_CHECK_ARG(capacity > 0, "capacity is 0");
    return engine->allocate(capacity);
  });
}

int32_t smem_trans_free(smem_trans_t handle, void* address) {
  return run_api("smem_trans_free", [&] {
    auto engine = engine_of(handle);
    MEMLOOM_CHECK_ARG(address != nullptr, "address is null");
    engine->release(address);
  });
}

int32_t smem_trans_register_mem(smem_trans_t handle, void* address, size_t capacity,
                                uint32_t flags) {
  return run_api("smem_trans_register_mem", [&] {
    auto engine = engine_of(handle);
    MEMLOOM_CHECK_ARG(address != nullptr, "address is null");
    MEMLOOM_CHECK_ARG(capacity > 0, "capacity is 0");
    MEMLOOM_CHECK_ARG(address_value(address) <= UINT64_MAX - capacity,
                      "the range wraps around the address space");
    check_flags(flags);
    engine->register_memory({{address, capacity}});
  });
}

int32_t smem_trans_batch_register_mem(smem_trans_t handle, void* addresses[], size_t capacities[],
                                      uint32_t count, uint32_t flags) {
  return run_api("smem_trans_batch_register_mem", [&] {
    auto engine = engine_of(handle);
    MEMLOOM_CHECK_ARG(addresses != nullptr, "addresses is null");
    MEMLOOM_CHECK_ARG(capacities != nullptr, "capacities is null");
    MEMLOOM_CHECK_ARG(count > 0, "count is 0");
    check_flags(flags);
    std::vector<std::pair<void*, size_t>> ranges;
    ranges.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      const std::string where = " of entry " + std::to_string(i);
      MEMLOOM_CHECK_ARG(addresses[i] != nullptr, "the address" + where + " is null");
      MEMLOOM_CHECK_ARG(capacities[i] > 0, "the capacity" + where + " is 0");
      MEMLOOM_CHECK_ARG(address_value(addresses[i]) <= UINT64_MAX - capacities[i],
                        "the range" + where + " wraps around the address space");
      ranges.emplace_back(addresses[i], capacities[i]);
    }
    engine->register_memory(ranges);
  });
}

int32_t smem_trans_deregister_mem(smem_trans_t handle, void* address) {
  return run_api("smem_trans_deregister_mem", [&] {
    auto engine = engine_of(handle);
    MEMLOOM_CHECK_ARG(address != nullptr, "address is null");
    engine->deregister_memory(address);
  });
}

int32_t smem_trans_write(smem_trans_t handle, const void* localAddr, const char* remoteUniqueId,
                         void* remoteAddr, size_t dataSize, uint32_t flags) {
  return run_api("smem_trans_write", [&] {
    transfer_now(handle, Direction::kWrite, remoteUniqueId,
                 {entry(localAddr, remoteAddr, dataSize)}, flags);
  });
}

int32_t smem_trans_batch_write(smem_trans_t handle, const void* localAddrs[],
                               const char* remoteUniqueId, void* remoteAddrs[], size_t dataSizes[],
                               uint32_t batchSize, uint32_t flags) {
  return run_api("smem_trans_batch_write", [&] {
    transfer_now(
        handle, Direction::kWrite, remoteUniqueId,
        batch(localAddrs, const_cast<const void* const*>(remoteAddrs), dataSizes, batchSize),
        flags);
  });
}

int32_t smem_trans_read(smem_trans_t handle, void* localAddr, const char* remoteUniqueId,
                        const void* remoteAddr, size_t dataSize, uint32_t flags) {
  return run_api("smem_trans_read", [&] {
    transfer_now(handle, Direction::kRead, remoteUniqueId, {entry(localAddr, remoteAddr, dataSize)},
                 flags);
  });
}

int32_t smem_trans_batch_read(smem_trans_t handle, void* localAddrs[], const char* remoteUniqueId,
                              const void* remoteAddrs[], size_t dataSizes[], uint32_t batchSize,
                              uint32_t flags) {
  return run_api("smem_trans_batch_read", [&] {
    transfer_now(
        handle, Direction::kRead, remoteUniqueId,
        batch(const_cast<const void* const*>(localAddrs), remoteAddrs, dataSizes, batchSize),
        flags);
  });
}

int32_t smem_trans_read_submit(smem_trans_t handle, void* localAddr, const char* remoteUniqueId,
                               const void* remoteAddr, size_t dataSize, void* stream,
                               uint32_t flags) {
  return run_api("smem_trans_read_submit", [&] {
    transfer_in_stream(handle, Direction::kRead, remoteUniqueId,
                       {entry(localAddr, remoteAddr, dataSize)}, stream, flags);
  });
}

int32_t smem_trans_write_submit(smem_trans_t handle, const void* localAddr,
                                const char* remoteUniqueId, void* remoteAddr, size_t dataSize,
                                void* stream, uint32_t flags) {
  return run_api("smem_trans_write_submit", [&] {
    transfer_in_stream(handle, Direction::kWrite, remoteUniqueId,
                       {entry(localAddr, remoteAddr, dataSize)}, stream, flags);
  });
}

int32_t smem_trans_batch_read_submit(smem_trans_t handle, void* localAddrs[],
                                     const char* remoteUniqueId, const void* remoteAddrs[],
                                     size_t dataSizes[], uint32_t batchSize, void* stream,
                                     uint32_t flags) {
  return run_api("smem_trans_batch_read_submit", [&] {
    transfer_in_stream(
        handle, Direction::kRead, remoteUniqueId,
        batch(const_cast<const void* const*>(localAddrs), remoteAddrs, dataSizes, batchSize),
        stream, flags);
  });
}

int32_t smem_trans_batch_write_submit(smem_trans_t handle, const void* localAddrs[],
                                      const char* remoteUniqueId, void* remoteAddrs[],
                                      size_t dataSizes[], uint32_t batchSize, void* stream,
                                      uint32_t flags) {
  return run_api("smem_trans_batch_write_submit", [&] {
    transfer_in_stream(
        handle, Direction::kWrite, remoteUniqueId,
        batch(localAddrs, const_cast<const void* const*>(remoteAddrs), dataSizes, batchSize),
        stream, flags);
  });
}

}  // extern "C"
