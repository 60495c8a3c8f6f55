// Faults: a peer that dies in the middle of transfers, one that stalls, and one that restarts
// under the same uniqueId while everyone else keeps running.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memloom/interrupt.h"
#include "smem/host/smem_trans.h"
#include "tests/support/multi_process.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kTimeoutSeconds = 3;
constexpr size_t kLarge = 16u << 20;

std::string address_text(const void* address) {
  return std::to_string(reinterpret_cast<uintptr_t>(address));
}
uint8_t* parse_address(const std::string& text) {
  return reinterpret_cast<uint8_t*>(std::stoull(text));
}

// Forks a process that serves `id` as a RECEIVER with kLarge registered bytes, publishes their
// address under `key`, and then waits to be killed. Called before the caller starts any thread.
pid_t start_victim(const std::string& store_url, const std::string& id, const std::string& key) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(60);  // never outlives a broken test
  auto client = store::Client::connect(store_url);
  smem_trans_config_t config = make_config(
      SMEM_TRANS_RECEIVER, SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP, kTimeoutSeconds);
  smem_trans_init(&config);
  smem_trans_t handle = smem_trans_create(store_url.c_str(), id.c_str(), &config);
  auto* memory = new uint8_t[kLarge]();
  if (handle == nullptr || smem_trans_register_mem(handle, memory, kLarge, 0) != SMEM_SUCCESS)
    ::_exit(5);
  publish(*client, key, address_text(memory));
  while (true) ::pause();
}

smem_trans_t create_instance(const std::string& store_url, const std::string& id,
                             smem_trans_role_t role) {
  smem_trans_config_t config =
      make_config(role, SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP, kTimeoutSeconds);
  EXPECT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
  smem_trans_t handle = smem_trans_create(store_url.c_str(), id.c_str(), &config);
  EXPECT_NE(handle, nullptr) << smem_get_last_err_msg();
  return handle;
}

// Rank 1: hosts the victim (a child process), a survivor instance, and later the victim's restart.
void host_peers(const testing::RankContext& context) {
  const std::string victim_id = free_unique_id();
  pid_t victim = start_victim(context.store_url, victim_id, "victim/address");
  auto client = store::Client::connect(context.store_url);
  const std::string survivor_id = free_unique_id();
  smem_trans_t survivor = create_instance(context.store_url, survivor_id, SMEM_TRANS_RECEIVER);
  std::vector<uint8_t> survivor_memory(1 << 20);
  ASSERT_EQ(smem_trans_register_mem(survivor, survivor_memory.data(), survivor_memory.size(), 0),
            SMEM_SUCCESS);
  publish(*client, "victim/id", victim_id);
  publish(*client, "survivor", survivor_id + " " + address_text(survivor_memory.data()));

  await(*client, "kill");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // let large writes get under way
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  publish(*client, "killed", "1");

  await(*client, "restart");
  smem_trans_t restarted = create_instance(context.store_url, victim_id, SMEM_TRANS_RECEIVER);
  std::vector<uint8_t> restarted_memory(1 << 20);
  ASSERT_EQ(smem_trans_register_mem(restarted, restarted_memory.data(), restarted_memory.size(), 0),
            SMEM_SUCCESS);
  publish(*client, "restarted/address", address_text(restarted_memory.data()));
  await(*client, "done");
  smem_trans_uninit(0);
}

// Rank 0: keeps writing into the victim while it dies, then uses the survivor and the restart.
void drive(const testing::RankContext& context) {
  auto client = store::Client::connect(context.store_url);
  smem_trans_t sender = create_instance(context.store_url, free_unique_id(), SMEM_TRANS_SENDER);
  const std::string victim_id = await(*client, "victim/id");
  uint8_t* victim_memory = parse_address(await(*client, "victim/address"));
  std::istringstream survivor_text(await(*client, "survivor"));
  std::string survivor_id, survivor_address;
  survivor_text >> survivor_id >> survivor_address;
  uint8_t* survivor_memory = parse_address(survivor_address);

  auto data = random_bytes(kLarge, fresh_seed());
  ASSERT_EQ(smem_trans_write(sender, data.data(), victim_id.c_str(), victim_memory, kLarge, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  publish(*client, "kill", "1");
  int code = SMEM_SUCCESS;
  Clock::duration failing_call{};
  const auto give_up = Clock::now() + std::chrono::seconds(20);
  while (code == SMEM_SUCCESS && Clock::now() < give_up) {
    auto start = Clock::now();
    code = smem_trans_write(sender, data.data(), victim_id.c_str(), victim_memory, kLarge, 0);
    failing_call = Clock::now() - start;
  }
  EXPECT_TRUE(code == SMEM_COMM_ERROR || code == SMEM_TIMEOUT)
      << code << ": " << smem_get_last_err_msg();
  EXPECT_LT(failing_call, std::chrono::seconds(kTimeoutSeconds + 2));
  await(*client, "killed");

  // Other peers keep working.
  auto small = random_bytes(1 << 20, fresh_seed());
  std::vector<uint8_t> back(small.size());
  ASSERT_EQ(
      smem_trans_write(sender, small.data(), survivor_id.c_str(), survivor_memory, small.size(), 0),
      SMEM_SUCCESS)
      << smem_get_last_err_msg();
  ASSERT_EQ(
      smem_trans_read(sender, back.data(), survivor_id.c_str(), survivor_memory, back.size(), 0),
      SMEM_SUCCESS);
  EXPECT_EQ(back, small);

  // The dead peer fails at once, again and again.
  for (int i = 0; i < 3; ++i) {
    auto start = Clock::now();
    code = smem_trans_write(sender, small.data(), victim_id.c_str(), victim_memory, 4096, 0);
    EXPECT_EQ(code, SMEM_COMM_ERROR) << smem_get_last_err_msg();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(kTimeoutSeconds + 1));
  }

  // Restarted under the same name: reachable again through the same handle.
  publish(*client, "restart", "1");
  uint8_t* restarted_memory = parse_address(await(*client, "restarted/address"));
  ASSERT_EQ(
      smem_trans_write(sender, small.data(), victim_id.c_str(), restarted_memory, small.size(), 0),
      SMEM_SUCCESS)
      << smem_get_last_err_msg();
  std::fill(back.begin(), back.end(), 0);
  ASSERT_EQ(
      smem_trans_read(sender, back.data(), victim_id.c_str(), restarted_memory, back.size(), 0),
      SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(back, small);
  publish(*client, "done", "1");
  smem_trans_uninit(0);
}

class TransFault : public ::testing::TestWithParam<int> {};

TEST_P(TransFault, ADyingPeerFailsOnlyItsOwnTransfersAndCanRestart) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.nodes = GetParam();
  options.timeout = std::chrono::seconds(60);
  auto results = testing::run_ranks(options, [](const testing::RankContext& context) {
    context.rank == 0 ? drive(context) : host_peers(context);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Over TCP a stopped peer cannot take the bytes: the transfer fails at the deadline. (A stopped
// peer on the same node is still written directly: its memory needs no help from it.)
TEST(TransFaultStall, AStalledRemotePeerTimesOutAtTheDeadline) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.nodes = 2;
  options.timeout = std::chrono::seconds(60);
  auto results = testing::run_ranks(options, [](const testing::RankContext& context) {
    if (context.rank == 1) {
      const std::string victim_id = free_unique_id();
      pid_t victim =
          start_victim(context.store_url, victim_id, "victim/address");  // before any thread
      auto client = store::Client::connect(context.store_url);
      publish(*client, "victim/id", victim_id);
      await(*client, "stop");
      ::kill(victim, SIGSTOP);
      publish(*client, "stopped", "1");
      await(*client, "done", std::chrono::seconds(40));
      ::kill(victim, SIGKILL);
      ::waitpid(victim, nullptr, 0);
      return;
    }
    auto client = store::Client::connect(context.store_url);
    smem_trans_t sender = create_instance(context.store_url, free_unique_id(), SMEM_TRANS_SENDER);
    const std::string victim_id = await(*client, "victim/id");
    uint8_t* memory = parse_address(await(*client, "victim/address"));
    auto data = random_bytes(kLarge, fresh_seed());
    ASSERT_EQ(smem_trans_write(sender, data.data(), victim_id.c_str(), memory, kLarge, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    publish(*client, "stop", "1");
    await(*client, "stopped");
    auto start = Clock::now();
    EXPECT_EQ(smem_trans_write(sender, data.data(), victim_id.c_str(), memory, kLarge, 0),
              SMEM_TIMEOUT)
        << smem_get_last_err_msg();
    auto took = Clock::now() - start;
    EXPECT_GE(took, std::chrono::milliseconds(kTimeoutSeconds * 1000 - 100));
    EXPECT_LT(took, std::chrono::seconds(kTimeoutSeconds + 2));
    publish(*client, "done", "1");
    smem_trans_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// The caller's interrupt check (memloom/interrupt.h) ends a write that waits on a stalled remote
// peer with SMEM_INTERRUPTED soon after it says so; once the peer runs again, the next write to it
// works (the interrupted connection was not reused).
int interrupted_after(void* context) {
  return Clock::now() >= *static_cast<Clock::time_point*>(context) ? 1 : 0;
}

TEST(TransFaultStall, AnInterruptCheckEndsAStalledWriteAndTheNextWriteWorks) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.nodes = 2;
  options.timeout = std::chrono::seconds(60);
  auto results = testing::run_ranks(options, [](const testing::RankContext& context) {
    if (context.rank == 1) {
      const std::string victim_id = free_unique_id();
      pid_t victim =
          start_victim(context.store_url, victim_id, "victim/address");  // before any thread
      auto client = store::Client::connect(context.store_url);
      publish(*client, "victim/id", victim_id);
      await(*client, "stop");
      ::kill(victim, SIGSTOP);
      publish(*client, "stopped", "1");
      await(*client, "resume", std::chrono::seconds(40));
      ::kill(victim, SIGCONT);
      publish(*client, "resumed", "1");
      await(*client, "done", std::chrono::seconds(40));
      ::kill(victim, SIGKILL);
      ::waitpid(victim, nullptr, 0);
      return;
    }
    auto client = store::Client::connect(context.store_url);
    smem_trans_t sender = create_instance(context.store_url, free_unique_id(), SMEM_TRANS_SENDER);
    const std::string victim_id = await(*client, "victim/id");
    uint8_t* memory = parse_address(await(*client, "victim/address"));
    auto data = random_bytes(kLarge, fresh_seed());
    ASSERT_EQ(smem_trans_write(sender, data.data(), victim_id.c_str(), memory, kLarge, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    publish(*client, "stop", "1");
    await(*client, "stopped");
    Clock::time_point at = Clock::now() + std::chrono::milliseconds(300);
    memloom_interrupt_check_set(&interrupted_after, &at);
    const int code = smem_trans_write(sender, data.data(), victim_id.c_str(), memory, kLarge, 0);
    memloom_interrupt_check_set(nullptr, nullptr);
    const auto ended = Clock::now();
    EXPECT_EQ(code, SMEM_INTERRUPTED) << smem_get_last_err_msg();
    EXPECT_NE(std::string(smem_get_last_err_msg()).find("interrupted"), std::string::npos);
    EXPECT_LT(ended - at, std::chrono::milliseconds(200)) << "the deadline was 3 s";
    publish(*client, "resume", "1");
    await(*client, "resumed");
    auto again = random_bytes(kLarge, fresh_seed());
    std::vector<uint8_t> back(kLarge);
    EXPECT_EQ(smem_trans_write(sender, again.data(), victim_id.c_str(), memory, kLarge, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    EXPECT_EQ(smem_trans_read(sender, back.data(), victim_id.c_str(), memory, kLarge, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    EXPECT_EQ(back, again);
    publish(*client, "done", "1");
    smem_trans_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(Nodes, TransFault, ::testing::Values(1, 2), [](const auto& info) {
  return info.param == 1 ? "SameNode" : "OtherNode";
});

}  // namespace
}  // namespace memloom::trans_test
