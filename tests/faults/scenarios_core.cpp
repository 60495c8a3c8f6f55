// Store operations and the core's group collectives (the HAL Collectives every API sits on).
#include <atomic>
#include <thread>
#include <vector>

#include "src/core/group.h"
#include "src/store/client.h"
#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

constexpr auto kTimeout = std::chrono::seconds(kCallTimeoutSeconds);

// The victim hammers the store with set/add/get when it dies; survivors wait (get with a timeout)
// for a key only the victim would write. The server must keep serving them, their wait must end at
// its timeout, and they must hear that the victim went down.
class StoreOps : public Scenario {
 public:
  void setup(const FaultContext& context) override {
    context_ = context;
    store::ClientOptions options;
    options.rank = context.rank.rank;
    options.group = context.rank.job_id + "/store-ops";
    options.heartbeat_timeout = std::chrono::milliseconds(1000);
    client_ = store::Client::connect(context.rank.store_url, options);
    watch_ = client_->watch_rank_down(options.group, [this](const store::WatchEvent& event) {
      if (event.rank == context_.victim) victim_down_ = true;
    });
    prefix_ = context.rank.job_id + "/store-ops/";
  }
  CallResult call() override {
    return core_call([&] {
      const std::string mine = prefix_ + std::to_string(context_.rank.rank);
      client_->set(mine, "alive");
      client_->add(prefix_ + "counter", 1);
      if (client_->get(mine, std::chrono::milliseconds(0)) != "alive") {
        raise(Status::kLogic, "the store lost a key");
      }
      if (!client_->get(prefix_ + "victim-finished", kTimeout)) {
        raise(Status::kTimeout, "the victim's key did not appear");
      }
    });
  }
  void victim_call() override {
    const std::string mine = prefix_ + std::to_string(context_.rank.rank);
    client_->set(mine, std::string(4096, 'v'));
    client_->add(prefix_ + "counter", 1);
    client_->get(mine, std::chrono::milliseconds(0));
  }
  void shutdown() override {
    // The server still serves the survivors, and told them the victim went down.
    EXPECT_GE(client_->add(prefix_ + "counter", 0), 1);
    const auto end = Clock::now() + std::chrono::seconds(5);
    while (!victim_down_ && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(victim_down_) << "no rank-down event for the victim";
    client_->unwatch(watch_);
    client_.reset();
  }
  bool is_peer_failure(int code) const override {
    return code == static_cast<int>(Status::kTimeout);
  }

 private:
  FaultContext context_;
  std::string prefix_;
  std::unique_ptr<store::Client> client_;
  store::WatchId watch_ = 0;
  std::atomic<bool> victim_down_{false};
};

enum class GroupCall { kBarrier, kAllgather, kAlltoallv, kBroadcast };

// core::Group over the platform's collectives, as WholeMemory, SHM and BM use it.
class GroupCollective : public Scenario {
 public:
  explicit GroupCollective(GroupCall which) : which_(which) {}
  void setup(const FaultContext& context) override {
    client_ = store::Client::connect(context.rank.store_url);
    group_ = core::Group::create(client_, store::KeyPrefix(context.rank.job_id + "/group/"),
                                 context.rank.rank, context.rank.world_size,
                                 Deadline::after(std::chrono::seconds(20)));
    const size_t n = static_cast<size_t>(context.rank.world_size);
    send_.assign(n * kBytes, std::byte{1});
    receive_.assign(n * kBytes, std::byte{0});
    counts_.assign(n, kBytes);
    for (size_t r = 0; r < n; ++r) displs_.push_back(r * kBytes);
  }
  CallResult call() override {
    return core_call([&] {
      auto& collectives = group_->collectives();
      const Deadline deadline = Deadline::after(kTimeout);
      switch (which_) {
        case GroupCall::kBarrier:
          collectives.barrier(deadline);
          break;
        case GroupCall::kAllgather:
          collectives.allgather(send_.data(), receive_.data(), kBytes, deadline);
          break;
        case GroupCall::kAlltoallv:
          collectives.alltoallv(send_.data(), counts_.data(), displs_.data(), receive_.data(),
                                counts_.data(), displs_.data(), deadline);
          break;
        case GroupCall::kBroadcast:
          collectives.broadcast(send_.data(), kBytes, 0, deadline);
          break;
      }
    });
  }
  void shutdown() override {
    group_.reset();
    client_.reset();
  }
  bool is_peer_failure(int code) const override { return is_core_peer_failure(code); }

 private:
  static constexpr size_t kBytes = 64 * 1024;
  GroupCall which_;
  std::shared_ptr<store::Client> client_;
  std::shared_ptr<core::Group> group_;
  std::vector<std::byte> send_, receive_;
  std::vector<size_t> counts_, displs_;
};

template <GroupCall which>
ScenarioEntry group_entry(const std::string& name) {
  return {name, [] { return std::make_unique<GroupCollective>(which); }};
}

}  // namespace

std::vector<ScenarioEntry> store_and_group_scenarios() {
  return {
      {"StoreOps", [] { return std::make_unique<StoreOps>(); }, true, false},
      group_entry<GroupCall::kBarrier>("GroupBarrier"),
      group_entry<GroupCall::kAllgather>("GroupAllgather"),
      group_entry<GroupCall::kAlltoallv>("GroupAlltoallv"),
      group_entry<GroupCall::kBroadcast>("GroupBroadcast"),
  };
}

void publish(const std::string& store_url, const std::string& key, const std::string& value) {
  store::Client::connect(store_url)->set(key, value);
}

std::string await(const std::string& store_url, const std::string& key) {
  auto value = store::Client::connect(store_url)->get(key, std::chrono::seconds(30));
  if (!value) raise(Status::kTimeout, "fault harness: '" + key + "' never appeared");
  return *value;
}

}  // namespace memloom::faults
