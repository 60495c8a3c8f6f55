// BM's blocking calls: create (+ destroy), the first join (collective), and copies to and from the
// victim's slot (through the transport, so the victim is on another node), synchronous and
// asynchronous (+ wait).
#include <thread>
#include <vector>

#include "smem/host/smem_bm.h"
#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

constexpr uint64_t kSlot = 2ull << 20;
constexpr size_t kCopyBytes = 1 << 20;

enum class BmCall { kCreate, kJoin, kCopyToVictim, kCopyFromVictim, kAsyncCopyWait };

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

class BmCallScenario : public Scenario {
 public:
  explicit BmCallScenario(BmCall which) : which_(which) {}
  void setup(const FaultContext& context) override {
    smem_bm_config_t config;
    smem_bm_config_init(&config);
    config.startConfigStoreServer = false;
    config.initTimeout = 20;
    // As for SHM: the faulted call's deadline only where create is the call under test.
    const bool collective = which_ == BmCall::kCreate || which_ == BmCall::kJoin;
    config.createTimeout = collective ? kCallTimeoutSeconds : 20;
    config.controlOperationTimeout = kCallTimeoutSeconds;
    config.rankId = static_cast<uint16_t>(context.rank.rank);
    config.autoRanking = false;
    size_ = static_cast<uint32_t>(context.rank.world_size);
    ASSERT_EQ(smem_bm_init(context.rank.store_url.c_str(), size_,
                           static_cast<uint16_t>(context.rank.device()), &config),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    if (which_ == BmCall::kCreate) return;  // its only object is the one the call creates
    bm_ = create(next_id_++);
    ASSERT_NE(bm_, nullptr) << smem_get_last_err_msg();
    if (which_ == BmCall::kJoin) return;  // the call joins it
    ASSERT_EQ(smem_bm_join(bm_, 0, nullptr), SMEM_SUCCESS) << smem_get_last_err_msg();
    victim_slot_ = static_cast<char*>(
        smem_bm_ptr_by_mem_type(bm_, SMEM_MEM_TYPE_DEVICE, static_cast<uint16_t>(context.victim)));
    buffer_.assign(kCopyBytes, 0x5a);
    // Every rank has joined before anyone copies.
    store_barrier(context.rank.store_url, context.rank.job_id + "/bm-joined",
                  context.rank.world_size);
  }
  CallResult call() override {
    switch (which_) {
      case BmCall::kCreate: {
        smem_bm_t other = create(1);
        if (other == nullptr) return {SMEM_ERROR, smem_get_last_err_msg()};
        smem_bm_destroy(other);
        return {};
      }
      case BmCall::kJoin: {
        // Each round a fresh object, whose first join waits for every member.
        if (bm_ == nullptr) bm_ = create(next_id_++);
        if (bm_ == nullptr) return {SMEM_ERROR, smem_get_last_err_msg()};
        CallResult joined = smem_result(smem_bm_join(bm_, 0, nullptr));
        if (joined.failed()) return joined;
        smem_bm_destroy(bm_);
        bm_ = nullptr;
        return {};
      }
      case BmCall::kCopyToVictim:
        return copy(buffer_.data(), victim_slot_, SMEMB_COPY_H2G, 0);
      case BmCall::kCopyFromVictim:
        return copy(victim_slot_, buffer_.data(), SMEMB_COPY_G2H, 0);
      case BmCall::kAsyncCopyWait: {
        CallResult issued = copy(buffer_.data(), victim_slot_, SMEMB_COPY_H2G, ASYNC_COPY_FLAG);
        if (issued.failed()) return issued;
        return smem_result(smem_bm_wait(bm_));
      }
    }
    return {};
  }
  void victim_call() override {
    if (which_ == BmCall::kCreate || which_ == BmCall::kJoin) {
      call();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // its memory is the target
    }
  }
  bool involves_victim(const FaultContext& context) const override {
    // Copies into a slot mapped on this node are plain stores: the victim takes no part.
    return which_ == BmCall::kCreate || which_ == BmCall::kJoin || !context.shares_victims_node();
  }
  void shutdown() override {
    if (bm_ != nullptr) smem_bm_destroy(bm_);
    smem_bm_uninit(0);
  }
  bool is_peer_failure(int code) const override {
    // A NULL handle from create.
    if ((which_ == BmCall::kCreate || which_ == BmCall::kJoin) && code == SMEM_ERROR) return true;
    return code == SMEM_COMM_ERROR || code == SMEM_TIMEOUT || code == SMEM_NOT_FOUND;
  }

 private:
  smem_bm_t create(uint32_t id) {
    return smem_bm_create(
        id, size_, static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP),
        0, kSlot, 0);
  }
  CallResult copy(const void* src, void* dst, smem_bm_copy_type type, uint32_t flags) {
    smem_copy_params params{src, dst, kCopyBytes};
    return smem_result(smem_bm_copy(bm_, &params, type, flags));
  }

  BmCall which_;
  uint32_t size_ = 0;
  uint32_t next_id_ = 0;
  smem_bm_t bm_ = nullptr;
  char* victim_slot_ = nullptr;
  std::vector<char> buffer_;
};

template <BmCall which>
ScenarioEntry bm_entry(const std::string& name, bool one_node) {
  return {name, [] { return std::make_unique<BmCallScenario>(which); }, one_node, true};
}

}  // namespace

std::vector<ScenarioEntry> bm_scenarios() {
  // A copy into a same-node peer's slot is a store into memory this process has mapped: it does
  // not involve the peer, so it succeeds after the peer's death (as with CUDA IPC). Copies are
  // therefore checked with the victim on the other node.
  return {
      bm_entry<BmCall::kCreate>("BmCreate", true),
      bm_entry<BmCall::kJoin>("BmJoin", true),
      bm_entry<BmCall::kCopyToVictim>("BmCopyToVictim", false),
      bm_entry<BmCall::kCopyFromVictim>("BmCopyFromVictim", false),
      bm_entry<BmCall::kAsyncCopyWait>("BmAsyncCopyWait", false),
  };
}

}  // namespace memloom::faults
