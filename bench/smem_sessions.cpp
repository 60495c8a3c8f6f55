#include "bench/smem_sessions.h"

#include <stdexcept>

#include "smem/host/smem.h"

namespace memloom::bench {
namespace {

// The benchmarks copy to and from device slots only, so each rank's host slot stays small.
constexpr uint64_t kBmHostSlot = 2u << 20;

}  // namespace

void check_smem(int32_t code, const std::string& what) {
  if (code != 0) {
    throw std::runtime_error(what + " failed (" + std::to_string(code) +
                             "): " + smem_get_last_err_msg());
  }
}

ShmSession::ShmSession(const RankInfo& info, uint64_t symmetric_size, uint32_t timeout_seconds) {
  smem_shm_config_t config;
  check_smem(smem_shm_config_init(&config), "smem_shm_config_init");
  config.startConfigStoreServer = false;  // the job's store process serves
  config.controlOperationTimeout = timeout_seconds;
  config.shmInitTimeout = timeout_seconds;
  config.shmCreateTimeout = timeout_seconds;
  check_smem(smem_init(0), "smem_init");
  check_smem(
      smem_shm_init(info.store_url.c_str(), static_cast<uint32_t>(info.world_size),
                    static_cast<uint32_t>(info.rank), static_cast<uint16_t>(info.device), &config),
      "smem_shm_init");
  handle_ =
      smem_shm_create(0, static_cast<uint32_t>(info.world_size), static_cast<uint32_t>(info.rank),
                      symmetric_size, SMEMS_DATA_OP_MTE, 0, &gva_);
  if (handle_ == nullptr) check_smem(-1, "smem_shm_create");
  stride_ = smem_shm_get_symmetric_size(handle_);
}

ShmSession::~ShmSession() {
  smem_shm_destroy(handle_, 0);
  smem_shm_uninit(0);
  smem_uninit();
}

void ShmSession::barrier() const {
  check_smem(smem_shm_control_barrier(handle_), "smem_shm_control_barrier");
}

BmSession::BmSession(const RankInfo& info, uint64_t device_bytes, uint32_t timeout_seconds) {
  smem_bm_config_t config;
  check_smem(smem_bm_config_init(&config), "smem_bm_config_init");
  config.startConfigStoreServer = false;  // the job's store process serves
  config.rankId = static_cast<uint16_t>(info.rank);
  config.autoRanking = false;
  config.initTimeout = timeout_seconds;
  config.createTimeout = timeout_seconds;
  config.controlOperationTimeout = timeout_seconds;
  check_smem(smem_init(0), "smem_init");
  check_smem(smem_bm_init(info.store_url.c_str(), static_cast<uint32_t>(info.world_size),
                          static_cast<uint16_t>(info.device), &config),
             "smem_bm_init");
  handle_ = smem_bm_create(0, static_cast<uint32_t>(info.world_size), SMEMB_DATA_OP_SDMA,
                           kBmHostSlot, device_bytes, 0);
  if (handle_ == nullptr) check_smem(-1, "smem_bm_create");
  void* mine = nullptr;
  check_smem(smem_bm_join(handle_, 0, &mine), "smem_bm_join");
}

BmSession::~BmSession() {
  smem_bm_leave(handle_, 0);
  smem_bm_destroy(handle_);
  smem_bm_uninit(0);
  smem_uninit();
}

char* BmSession::device_slot(int rank) const {
  void* slot = smem_bm_ptr_by_mem_type(handle_, SMEM_MEM_TYPE_DEVICE, static_cast<uint16_t>(rank));
  if (slot == nullptr) check_smem(-1, "smem_bm_ptr_by_mem_type");
  return static_cast<char*>(slot);
}

TransSession::TransSession(const RankInfo& info, smem_trans_role_t role,
                           const std::string& unique_id, uint32_t timeout_seconds,
                           std::optional<uint32_t> device) {
  smem_trans_config_t config;
  check_smem(smem_trans_config_init(&config), "smem_trans_config_init");
  config.role = role;
  config.initTimeout = timeout_seconds;
  if (device) config.deviceId = *device;
  check_smem(smem_trans_init(&config), "smem_trans_init");
  handle_ = smem_trans_create(info.store_url.c_str(), unique_id.c_str(), &config);
  if (handle_ == nullptr) {
    smem_trans_uninit(0);  // the destructor will not run; the failure's message is kept
    check_smem(-1, "smem_trans_create");
  }
}

TransSession::~TransSession() {
  smem_trans_destroy(handle_, 0);
  smem_trans_uninit(0);
}

}  // namespace memloom::bench
