// WholeMemory's collective calls: barrier, malloc + free, split + destroy of a communicator.
#include <cstring>

#include "src/base/log.h"
#include "tests/faults/scenarios.h"
#include "wholememory/wholememory.h"

namespace memloom::faults {
namespace {

enum class WmCall { kBarrier, kMallocFree, kSplit };

CallResult wm_result(wholememory_error_code_t code) {
  if (code == WHOLEMEMORY_SUCCESS) return {};
  // The facade logs the reason and keeps it as the thread's last error.
  return {static_cast<int>(code), log::last_error()};
}

class WholeMemoryCall : public Scenario {
 public:
  explicit WholeMemoryCall(WmCall which) : which_(which) {}
  void setup(const FaultContext& context) override {
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id{};
    const std::string key = context.rank.job_id + "/wm-unique-id";
    if (context.rank.rank == 0) {
      ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
      publish(context.rank.store_url, key, std::string(id.internal, sizeof(id.internal)));
    } else {
      const std::string bytes = await(context.rank.store_url, key);
      std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
    }
    ASSERT_EQ(
        wholememory_create_communicator(&comm_, id, context.rank.rank, context.rank.world_size),
        WHOLEMEMORY_SUCCESS)
        << log::last_error();
    rank_ = context.rank.rank;
  }
  CallResult call() override {
    switch (which_) {
      case WmCall::kBarrier:
        return wm_result(wholememory_communicator_barrier(comm_));
      case WmCall::kMallocFree: {
        wholememory_handle_t handle = nullptr;
        // DISTRIBUTED works on one node and across nodes alike.
        auto code = wholememory_malloc(&handle, 1 << 20, comm_, WHOLEMEMORY_MT_DISTRIBUTED,
                                       WHOLEMEMORY_ML_HOST, 64);
        if (code != WHOLEMEMORY_SUCCESS) return wm_result(code);
        return wm_result(wholememory_free(handle));
      }
      case WmCall::kSplit: {
        wholememory_comm_t half = nullptr;
        auto code = wholememory_split_communicator(&half, comm_, rank_ % 2, rank_);
        if (code != WHOLEMEMORY_SUCCESS) return wm_result(code);
        return wm_result(wholememory_destroy_communicator(half));
      }
    }
    return {};
  }
  void shutdown() override {
    // Frees what is left locally, without waiting on the dead peer.
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS) << log::last_error();
  }
  bool is_peer_failure(int code) const override { return code == WHOLEMEMORY_COMMUNICATION_ERROR; }

 private:
  WmCall which_;
  wholememory_comm_t comm_ = nullptr;
  int rank_ = 0;
};

template <WmCall which>
ScenarioEntry wm_entry(const std::string& name) {
  return {name, [] { return std::make_unique<WholeMemoryCall>(which); }};
}

}  // namespace

std::vector<ScenarioEntry> wholememory_scenarios() {
  return {
      wm_entry<WmCall::kBarrier>("WmBarrier"),
      wm_entry<WmCall::kMallocFree>("WmMallocFree"),
      wm_entry<WmCall::kSplit>("WmSplit"),
  };
}

}  // namespace memloom::faults
