// SHM's blocking calls: create (+ destroy), control barrier and allgather, sub-group barrier.
#include <vector>

#include "smem/host/smem_shm.h"
#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

constexpr uint64_t kSymmetric = 2ull << 20;

enum class ShmCall { kCreate, kBarrier, kAllgather, kSubgroupBarrier };

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

class ShmCallScenario : public Scenario {
 public:
  explicit ShmCallScenario(ShmCall which) : which_(which) {}
  void setup(const FaultContext& context) override {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = 20;
    // The create deadline is the faulted call's only when create is the call under test; the
    // set-up object of the other scenarios gets the slack of init (on GPUs under load its
    // allgather of segment descriptors has taken more than the 2 s of a faulted call).
    config.shmCreateTimeout = which_ == ShmCall::kCreate ? kCallTimeoutSeconds : 20;
    config.controlOperationTimeout = kCallTimeoutSeconds;
    size_ = static_cast<uint32_t>(context.rank.world_size);
    rank_ = static_cast<uint32_t>(context.rank.rank);
    ASSERT_EQ(smem_shm_init(context.rank.store_url.c_str(), size_, rank_,
                            static_cast<uint16_t>(context.rank.device()), &config),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    // The create scenario's only object is the one its faulted call creates.
    if (which_ == ShmCall::kCreate) return;
    void* gva = nullptr;
    shm_ = smem_shm_create(0, size_, rank_, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm_, nullptr) << smem_get_last_err_msg();
    send_.assign(256, static_cast<char>(rank_));
    receive_.assign(256 * size_, 0);
  }
  CallResult call() override {
    switch (which_) {
      case ShmCall::kCreate: {
        void* gva = nullptr;
        smem_shm_t other = smem_shm_create(1, size_, rank_, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
        if (other == nullptr) return {SMEM_ERROR, smem_get_last_err_msg()};
        return smem_result(smem_shm_destroy(other, 0));
      }
      case ShmCall::kBarrier:
        return smem_result(smem_shm_control_barrier(shm_));
      case ShmCall::kAllgather:
        return smem_result(smem_shm_control_allgather(shm_, send_.data(), 256, receive_.data(),
                                                      static_cast<uint32_t>(receive_.size())));
      case ShmCall::kSubgroupBarrier:
        return smem_result(smem_shm_subgroup_barrier(shm_, "everyone", size_, rank_));
    }
    return {};
  }
  void shutdown() override {
    if (shm_ != nullptr) {
      EXPECT_EQ(smem_shm_destroy(shm_, 0), SMEM_SUCCESS) << smem_get_last_err_msg();
    }
    smem_shm_uninit(0);
  }
  bool is_peer_failure(int code) const override {
    // smem_shm_create reports its failure as a NULL handle; the message tells why.
    if (which_ == ShmCall::kCreate && code == SMEM_ERROR) return true;
    return code == SMEM_COMM_ERROR || code == SMEM_TIMEOUT;
  }

 private:
  ShmCall which_;
  uint32_t size_ = 0;
  uint32_t rank_ = 0;
  smem_shm_t shm_ = nullptr;
  std::vector<char> send_, receive_;
};

template <ShmCall which>
ScenarioEntry shm_entry(const std::string& name) {
  return {name, [] { return std::make_unique<ShmCallScenario>(which); }};
}

}  // namespace

std::vector<ScenarioEntry> shm_scenarios() {
  return {
      shm_entry<ShmCall::kCreate>("ShmCreate"),
      shm_entry<ShmCall::kBarrier>("ShmBarrier"),
      shm_entry<ShmCall::kAllgather>("ShmAllgather"),
      shm_entry<ShmCall::kSubgroupBarrier>("ShmSubgroupBarrier"),
  };
}

}  // namespace memloom::faults
