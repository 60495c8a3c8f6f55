// TRANS's blocking calls: write and read of the victim's registered memory, single and batched.
// On one node they take the direct path (cross-memory attach into the victim), across nodes TCP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "smem/host/smem_trans.h"
#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

constexpr size_t kBytes = 4 << 20;

enum class TransCall { kWrite, kRead, kBatchWrite };

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

class TransCallScenario : public Scenario {
 public:
  explicit TransCallScenario(TransCall which) : which_(which) {}
  void setup(const FaultContext& context) override {
    smem_trans_config_t config;
    smem_trans_config_init(&config);
    config.role = SMEM_TRANS_BOTH;
    config.initTimeout = kCallTimeoutSeconds;
    config.dataOpType =
        static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP);
    ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS) << smem_get_last_err_msg();
    const std::string id = free_loopback_id();
    handle_ = smem_trans_create(context.rank.store_url.c_str(), id.c_str(), &config);
    ASSERT_NE(handle_, nullptr) << smem_get_last_err_msg();
    memory_.assign(kBytes, static_cast<char>(context.rank.rank));
    ASSERT_EQ(smem_trans_register_mem(handle_, memory_.data(), memory_.size(), 0), SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const std::string prefix = context.rank.job_id + "/trans/";
    if (context.is_victim()) {
      publish(context.rank.store_url, prefix + "id", id);
      publish(context.rank.store_url, prefix + "address",
              std::to_string(reinterpret_cast<uintptr_t>(memory_.data())));
    }
    victim_id_ = await(context.rank.store_url, prefix + "id");
    victim_memory_ =
        reinterpret_cast<char*>(std::stoull(await(context.rank.store_url, prefix + "address")));
    local_.assign(kBytes, 0x33);
  }
  CallResult call() override {
    const char* peer = victim_id_.c_str();
    switch (which_) {
      case TransCall::kWrite:
        return smem_result(
            smem_trans_write(handle_, local_.data(), peer, victim_memory_, kBytes, 0));
      case TransCall::kRead:
        return smem_result(
            smem_trans_read(handle_, local_.data(), peer, victim_memory_, kBytes, 0));
      case TransCall::kBatchWrite: {
        const void* sources[4];
        void* targets[4];
        size_t sizes[4];
        for (size_t i = 0; i < 4; ++i) {
          sources[i] = local_.data() + i * (kBytes / 4);
          targets[i] = victim_memory_ + i * (kBytes / 4);
          sizes[i] = kBytes / 4;
        }
        return smem_result(smem_trans_batch_write(handle_, sources, peer, targets, sizes, 4, 0));
      }
    }
    return {};
  }
  void victim_call() override { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }
  void shutdown() override {
    smem_trans_destroy(handle_, 0);
    smem_trans_uninit(0);
  }
  bool is_peer_failure(int code) const override {
    return code == SMEM_COMM_ERROR || code == SMEM_TIMEOUT;
  }

 private:
  TransCall which_;
  smem_trans_t handle_ = nullptr;
  std::vector<char> memory_, local_;
  std::string victim_id_;
  char* victim_memory_ = nullptr;
};

template <TransCall which>
ScenarioEntry trans_entry(const std::string& name) {
  return {name, [] { return std::make_unique<TransCallScenario>(which); }};
}

}  // namespace

std::string free_loopback_id() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  const bool bound = fd >= 0 &&
                     ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!bound) raise(Status::kSystem, "no free TCP port");
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

std::vector<ScenarioEntry> trans_scenarios() {
  return {
      trans_entry<TransCall::kWrite>("TransWrite"),
      trans_entry<TransCall::kRead>("TransRead"),
      trans_entry<TransCall::kBatchWrite>("TransBatchWrite"),
  };
}

}  // namespace memloom::faults
