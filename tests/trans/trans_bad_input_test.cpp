// Bad input of every argument of every function: an error code and a message, never a crash,
// a hang, or a write into memory that was not registered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "smem/host/smem_trans.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

std::string last_error() {
  return smem_get_last_err_msg();
}

class TransBadInput : public ::testing::Test {
 protected:
  // Instances go before the memory they serve (members are destroyed after TearDown).
  void TearDown() override { smem_trans_uninit(0); }

  void SetUp() override {
    config_ = make_config(SMEM_TRANS_BOTH);
    receiver_id_ = free_unique_id();
    receiver_ = smem_trans_create(env_.store_url().c_str(), receiver_id_.c_str(), &config_);
    sender_ = smem_trans_create(env_.store_url().c_str(), free_unique_id().c_str(), &config_);
    ASSERT_TRUE(receiver_ && sender_) << last_error();
    ASSERT_EQ(smem_trans_register_mem(receiver_, target_.data(), kRegistered, 0), SMEM_SUCCESS);
  }

  static constexpr size_t kRegistered = 4096;
  TransEnvironment env_;
  smem_trans_config_t config_{};
  std::string receiver_id_;
  smem_trans_t receiver_ = nullptr;
  smem_trans_t sender_ = nullptr;
  std::vector<uint8_t> target_ =
      std::vector<uint8_t>(2 * kRegistered, 0);  // second half unregistered
  std::vector<uint8_t> local_ = std::vector<uint8_t>(2 * kRegistered, 0xab);
};

TEST_F(TransBadInput, CreateRefusesEveryBadArgument) {
  const std::string url = env_.store_url();
  const std::string id = free_unique_id();
  EXPECT_EQ(smem_trans_create(nullptr, id.c_str(), &config_), nullptr);
  EXPECT_NE(last_error().find("storeUrl is null"), std::string::npos);
  EXPECT_EQ(smem_trans_create(url.c_str(), nullptr, &config_), nullptr);
  EXPECT_NE(last_error().find("uniqueId is null"), std::string::npos);
  EXPECT_EQ(smem_trans_create(url.c_str(), id.c_str(), nullptr), nullptr);
  EXPECT_NE(last_error().find("config is null"), std::string::npos);
  for (const char* bad :
       {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:80x",
        "localhost:5000", "::1:5000", "[::1]5000", "[::1:5000", "[nonsense]:5000", "1.2.3:5000"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(smem_trans_create(url.c_str(), bad, &config_), nullptr);
    EXPECT_NE(last_error().find("uniqueId"), std::string::npos) << last_error();
  }
  // Well formed, but not an address of this host.
  EXPECT_EQ(smem_trans_create(url.c_str(), "192.0.2.1:5000", &config_), nullptr);
  EXPECT_NE(last_error().find("not an address of this host"), std::string::npos) << last_error();

  auto with = [&](auto change) {
    smem_trans_config_t config = config_;
    change(config);
    return smem_trans_create(url.c_str(), id.c_str(), &config);
  };
  EXPECT_EQ(with([](auto& c) { c.role = SMEM_TRANS_NONE; }), nullptr);
  EXPECT_NE(last_error().find("config.role"), std::string::npos);
  EXPECT_EQ(with([](auto& c) { c.role = SMEM_TRANS_BUTT; }), nullptr);
  EXPECT_EQ(with([](auto& c) { c.initTimeout = 0; }), nullptr);
  EXPECT_NE(last_error().find("initTimeout"), std::string::npos);
  EXPECT_EQ(with([](auto& c) { c.flags = 4; }), nullptr);
  EXPECT_NE(last_error().find("config.flags"), std::string::npos);
  EXPECT_EQ(with([](auto& c) { c.dataOpType = static_cast<smem_bm_data_op_type>(1u << 7); }),
            nullptr);
  EXPECT_NE(last_error().find("dataOpType"), std::string::npos);
  EXPECT_EQ(with([](auto& c) { c.deviceId = 100000; }), nullptr);
  EXPECT_NE(last_error().find("deviceId"), std::string::npos);
  // A store nobody serves: fails at the deadline rather than hanging.
  smem_trans_config_t quick = config_;
  quick.initTimeout = 1;
  EXPECT_EQ(smem_trans_create(("tcp://" + free_unique_id()).c_str(), id.c_str(), &quick), nullptr);
  EXPECT_EQ(smem_trans_create("not a url", id.c_str(), &quick), nullptr);
  // After all these failures the id is still free.
  smem_trans_t handle = smem_trans_create(url.c_str(), id.c_str(), &config_);
  EXPECT_NE(handle, nullptr) << last_error();
  smem_trans_destroy(handle, 0);
}

TEST_F(TransBadInput, InitRefusesABadConfig) {
  EXPECT_EQ(smem_trans_init(nullptr), SMEM_INVALID_PARAM);
  smem_trans_config_t config = config_;
  config.role = static_cast<smem_trans_role_t>(42);
  EXPECT_EQ(smem_trans_init(&config), SMEM_INVALID_PARAM);
}

TEST_F(TransBadInput, HandlesAreChecked) {
  char not_a_handle[16] = {};
  EXPECT_EQ(smem_trans_register_mem(nullptr, target_.data(), 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_register_mem(not_a_handle, target_.data(), 8, 0), SMEM_INVALID_PARAM);
  EXPECT_NE(last_error().find("not a live transfer instance"), std::string::npos);
  EXPECT_EQ(
      smem_trans_write(not_a_handle, local_.data(), receiver_id_.c_str(), target_.data(), 8, 0),
      SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_malloc(not_a_handle, 64), nullptr);
  smem_trans_destroy(not_a_handle, 0);  // no crash
  smem_trans_destroy(nullptr, 0);
  smem_trans_destroy(sender_, 0);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), receiver_id_.c_str(), target_.data(), 8, 0),
            SMEM_INVALID_PARAM);
  smem_trans_destroy(sender_, 0);  // twice: an error, not a crash
  EXPECT_NE(last_error().find("destroyed twice"), std::string::npos);
  sender_ = nullptr;
}

TEST_F(TransBadInput, RegistrationArgumentsAreChecked) {
  std::vector<uint8_t> memory(1024);
  EXPECT_EQ(smem_trans_register_mem(receiver_, nullptr, 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_register_mem(receiver_, memory.data(), 0, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_register_mem(receiver_, memory.data(), 8, 1), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_register_mem(receiver_, reinterpret_cast<void*>(UINTPTR_MAX - 4), 8, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_register_mem(receiver_, target_.data() + 100, 8, 0),
            SMEM_INVALID_PARAM);  // overlap
  EXPECT_NE(last_error().find("overlaps"), std::string::npos);
  EXPECT_EQ(smem_trans_register_mem(receiver_, target_.data(), kRegistered, 0),
            SMEM_SUCCESS);  // same: no-op

  void* addresses[2] = {memory.data(), memory.data() + 512};
  size_t capacities[2] = {512, 512};
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, nullptr, capacities, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, addresses, nullptr, 2, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, addresses, capacities, 0, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, addresses, capacities, 2, 3),
            SMEM_INVALID_PARAM);
  capacities[1] = 0;
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, addresses, capacities, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_NE(last_error().find("entry 1"), std::string::npos);
  capacities[1] =
      513;  // overlaps nothing registered, but the second range overlaps the first? no: adjacent
  addresses[1] = target_.data() + 10;  // overlaps the registered target: all or nothing
  EXPECT_EQ(smem_trans_batch_register_mem(receiver_, addresses, capacities, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_deregister_mem(receiver_, memory.data()), SMEM_NOT_FOUND);  // rolled back

  EXPECT_EQ(smem_trans_deregister_mem(receiver_, nullptr), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_deregister_mem(receiver_, target_.data() + 1), SMEM_NOT_FOUND);
  EXPECT_NE(last_error().find("no registered region starts at"), std::string::npos);

  EXPECT_EQ(smem_trans_malloc(receiver_, 0), nullptr);
  EXPECT_EQ(smem_trans_malloc(receiver_, SIZE_MAX / 2), nullptr);
  EXPECT_NE(last_error().find("cannot reserve"), std::string::npos);
  EXPECT_EQ(smem_trans_free(receiver_, nullptr), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_free(receiver_, memory.data()), SMEM_INVALID_PARAM);
}

TEST_F(TransBadInput, TransferArgumentsAreChecked) {
  const char* peer = receiver_id_.c_str();
  EXPECT_EQ(smem_trans_write(sender_, nullptr, peer, target_.data(), 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), nullptr, target_.data(), 8, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), "not-an-id", target_.data(), 8, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), peer, nullptr, 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), peer, target_.data(), 0, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), peer, target_.data(), 8, 2),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), peer, reinterpret_cast<void*>(UINTPTR_MAX - 2),
                             8, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_read(sender_, nullptr, peer, target_.data(), 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_read(sender_, local_.data(), peer, nullptr, 8, 0), SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_read(sender_, local_.data(), peer, target_.data(), 0, 0),
            SMEM_INVALID_PARAM);

  // A well-formed name nobody uses: an immediate error, not a wait.
  const std::string nobody = free_unique_id();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(smem_trans_write(sender_, local_.data(), nobody.c_str(), target_.data(), 8, 0),
            SMEM_NOT_FOUND);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(last_error().find(nobody), std::string::npos);

  const void* locals[2] = {local_.data(), local_.data() + 8};
  void* remotes[2] = {target_.data(), target_.data() + 8};
  const void* const_remotes[2] = {target_.data(), target_.data() + 8};
  void* mutable_locals[2] = {local_.data(), local_.data() + 8};
  size_t sizes[2] = {8, 8};
  EXPECT_EQ(smem_trans_batch_write(sender_, nullptr, peer, remotes, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, nullptr, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, remotes, nullptr, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, remotes, sizes, 0, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, nullptr, remotes, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, remotes, sizes, 2, 9),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_read(sender_, nullptr, peer, const_remotes, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_read(sender_, mutable_locals, peer, nullptr, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_read(sender_, mutable_locals, peer, const_remotes, nullptr, 2, 0),
            SMEM_INVALID_PARAM);
  sizes[1] = 0;
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, remotes, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_NE(last_error().find("entry 1"), std::string::npos);
  sizes[1] = 8;
  remotes[1] = nullptr;
  EXPECT_EQ(smem_trans_batch_write(sender_, locals, peer, remotes, sizes, 2, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(target_,
            std::vector<uint8_t>(target_.size(), 0));  // nothing was written by any of these

  // Stream variants check the same arguments, and the stream.
  int not_used = 0;
  void* stream = &not_used;  // never dereferenced: every call below fails its checks first
  EXPECT_EQ(smem_trans_write_submit(sender_, local_.data(), peer, target_.data(), 8, nullptr, 0),
            SMEM_INVALID_PARAM);
  EXPECT_NE(last_error().find("stream is null"), std::string::npos);
  EXPECT_EQ(smem_trans_read_submit(sender_, local_.data(), peer, target_.data(), 8, nullptr, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_write_submit(sender_, nullptr, peer, target_.data(), 8, stream, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(
      smem_trans_read_submit(sender_, local_.data(), nobody.c_str(), target_.data(), 8, stream, 0),
      SMEM_NOT_FOUND);
  EXPECT_EQ(smem_trans_batch_write_submit(sender_, locals, peer, remotes, sizes, 0, stream, 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(smem_trans_batch_read_submit(sender_, mutable_locals, peer, const_remotes, sizes, 2,
                                         nullptr, 0),
            SMEM_INVALID_PARAM);
}

TEST_F(TransBadInput, MemoryOutsideTheRegistrationIsNeverWritten) {
  for (uint32_t ops : {uint32_t{SMEMB_DATA_OP_SDMA}, uint32_t{SMEMB_DATA_OP_HOST_TCP}}) {
    SCOPED_TRACE(ops);
    smem_trans_config_t config = make_config(SMEM_TRANS_SENDER, ops);
    smem_trans_t sender =
        smem_trans_create(env_.store_url().c_str(), free_unique_id().c_str(), &config);
    ASSERT_NE(sender, nullptr) << last_error();
    const char* peer = receiver_id_.c_str();
    // Just past the end, straddling the end, and wholly outside.
    EXPECT_EQ(smem_trans_write(sender, local_.data(), peer, target_.data() + kRegistered, 1, 0),
              SMEM_INVALID_PARAM);
    EXPECT_NE(last_error().find("not inside memory registered by"), std::string::npos)
        << last_error();
    EXPECT_EQ(smem_trans_write(sender, local_.data(), peer, target_.data() + kRegistered - 4, 8, 0),
              SMEM_INVALID_PARAM);
    EXPECT_EQ(smem_trans_write(sender, local_.data(), peer, local_.data(), 8, 0),
              SMEM_INVALID_PARAM);
    EXPECT_EQ(smem_trans_read(sender, local_.data(), peer, target_.data() + kRegistered - 1, 2, 0),
              SMEM_INVALID_PARAM);
    // A batch with one bad entry fails.
    const void* locals[3] = {local_.data(), local_.data(), local_.data()};
    void* remotes[3] = {target_.data(), target_.data() + kRegistered, target_.data() + 16};
    size_t sizes[3] = {8, 8, 8};
    EXPECT_EQ(smem_trans_batch_write(sender, locals, peer, remotes, sizes, 3, 0),
              SMEM_INVALID_PARAM);
    for (size_t i = kRegistered; i < target_.size(); ++i) ASSERT_EQ(target_[i], 0) << "byte " << i;
    // After a refusal the instance still works.
    EXPECT_EQ(smem_trans_write(sender, local_.data(), peer, target_.data(), kRegistered, 0),
              SMEM_SUCCESS)
        << last_error();
    EXPECT_EQ(std::vector<uint8_t>(target_.begin(), target_.begin() + kRegistered),
              std::vector<uint8_t>(local_.begin(), local_.begin() + kRegistered));
    std::fill(target_.begin(), target_.end(), 0);
    smem_trans_destroy(sender, 0);
  }
}

}  // namespace
}  // namespace memloom::trans_test
