// Who may read and write a TRANS instance's registered memory: only processes of its job. TRANS
// moves bytes to other nodes through the HAL transport, which serves only requesters that prove the
// job's secret (the config store hands it to every instance; hw/host/ucx_job_gate.h); the
// transport's own suites (tests/hal/transport_job_proof_test.cpp) cover the protocol on raw
// sockets. Here: the instance's published transport is closed to outsiders, and an initiator
// refuses a peer of another job.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "memloom/error.h"
#include "smem/host/smem_trans.h"
#include "src/smem/job_secret.h"
#include "src/smem/trans/peer_record.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

using Clock = std::chrono::steady_clock;
using Direction = hal::TransferOp::Direction;

smem_trans_t create(const std::string& store_url, const std::string& id, smem_trans_role_t role) {
  smem_trans_config_t config = make_config(role, SMEMB_DATA_OP_HOST_TCP, 10);
  return smem_trans_create(store_url.c_str(), id.c_str(), &config);
}

constexpr size_t kRegion = 1 << 16;

// A RECEIVER with kRegion registered bytes of seeded data.
struct Target {
  explicit Target(const std::string& store_url)
      : id(free_unique_id()), memory(random_bytes(kRegion, fresh_seed())), original(memory) {
    handle = create(store_url, id, SMEM_TRANS_RECEIVER);
    EXPECT_NE(handle, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(smem_trans_register_mem(handle, memory.data(), memory.size(), 0), SMEM_SUCCESS);
  }
  ~Target() {
    if (handle != nullptr) smem_trans_destroy(handle, 0);
  }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(memory.data()); }
  std::string id;
  std::vector<uint8_t> memory;
  std::vector<uint8_t> original;
  smem_trans_t handle = nullptr;
};

// The transport address the instance published (what an outsider who reads the store finds).
std::string published_transport(const std::string& store_url, const std::string& id) {
  auto store = store::Client::connect(store_url);
  return smem::trans::PeerRecord::decode(await(*store, smem::trans::peer_key(id))).transport;
}

TEST(TransSecurity, OutsiderWithoutTheJobSecretCannotReadOrWrite) {
  TransEnvironment environment;
  Target target(environment.store_url());
  ASSERT_NE(target.handle, nullptr);
  const std::string address = published_transport(environment.store_url(), target.id);
  // An outsider speaks the transport's protocol with a secret of its own (all zero: what a
  // transport without one proves).
  for (uint8_t fill : {uint8_t{0}, uint8_t{0x5A}}) {
    hal::TransportOptions options;
    options.job_secret.fill(fill);
    auto outsider = emulated::create_transport(options);
    std::vector<uint8_t> buffer(kRegion, 0xEE);
    for (Direction direction : {Direction::kRead, Direction::kWrite}) {
      EXPECT_THROW(
          outsider->transfer(address, {{direction, target.address(), buffer.data(), kRegion}},
                             Deadline::after(std::chrono::seconds(10))),
          Error);
    }
    EXPECT_EQ(buffer, std::vector<uint8_t>(kRegion, 0xEE)) << "an outsider read registered memory";
  }
  EXPECT_EQ(target.memory, target.original) << "an outsider changed registered memory";

  // A process that read the job's secret from the store is a member: served.
  auto store = store::Client::connect(environment.store_url());
  hal::TransportOptions options;
  options.job_secret = smem::load_or_create_job_secret(*store);
  auto member = emulated::create_transport(options);
  std::vector<uint8_t> read(kRegion);
  member->transfer(address, {{Direction::kRead, target.address(), read.data(), kRegion}},
                   Deadline::after(std::chrono::seconds(10)));
  EXPECT_EQ(read, target.original);
}

TEST(TransSecurity, InitiatorNamesAPeerOfAnotherJob) {
  TransEnvironment environment;
  // Another job (its own store, so its own secret) with an instance of its own.
  store::ServerOptions options;
  options.listen_url = "tcp://127.0.0.1:0";
  auto other_store = store::Server::start(options);
  Target stranger(other_store->url());
  ASSERT_NE(stranger.handle, nullptr);
  // Our store is made to point at it (a stale record, a misconfigured job).
  auto theirs = store::Client::connect(other_store->url());
  auto ours = store::Client::connect(environment.store_url());
  const std::string key = smem::trans::peer_key(stranger.id);
  ours->set(key, await(*theirs, key));

  smem_trans_t member = create(environment.store_url(), free_unique_id(), SMEM_TRANS_SENDER);
  ASSERT_NE(member, nullptr) << smem_get_last_err_msg();
  std::vector<uint8_t> data(64, 0x5A);
  const auto start = Clock::now();
  EXPECT_EQ(smem_trans_write(member, data.data(), stranger.id.c_str(), stranger.memory.data(),
                             data.size(), 0),
            SMEM_COMM_ERROR);
  const std::string message = smem_get_last_err_msg();
  EXPECT_NE(message.find(stranger.id), std::string::npos) << message;
  EXPECT_NE(message.find("job"), std::string::npos) << message;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(stranger.memory, stranger.original);
  smem_trans_destroy(member, 0);
}

}  // namespace
}  // namespace memloom::trans_test
