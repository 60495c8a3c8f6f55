// The *_submit variants: transfers in a stream's order, failures reported by synchronization.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/stream.h"
#include "memloom/error.h"
#include "smem/host/smem_trans.h"
#include "src/core/platform_loader.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

class TransStream : public ::testing::TestWithParam<PathMode> {
 protected:
  // Instances go before the memory they serve (members are destroyed after TearDown).
  void TearDown() override {
    smem_trans_uninit(0);
    use_path(PathMode::kDirect);
  }

  void SetUp() override {
    use_path(GetParam());
    smem_trans_config_t config = make_config(SMEM_TRANS_BOTH, data_ops_for(GetParam()));
    receiver_id_ = free_unique_id();
    receiver_ = smem_trans_create(env_.store_url().c_str(), receiver_id_.c_str(), &config);
    sender_ = smem_trans_create(env_.store_url().c_str(), free_unique_id().c_str(), &config);
    ASSERT_TRUE(receiver_ && sender_) << smem_get_last_err_msg();
    ASSERT_EQ(smem_trans_register_mem(receiver_, target_.data(), target_.size(), 0), SMEM_SUCCESS);
    stream_ = core::platform().create_stream(0);
  }

  Deadline soon() const { return Deadline::after(std::chrono::seconds(20)); }

  TransEnvironment env_;
  std::string receiver_id_;
  smem_trans_t receiver_ = nullptr;
  smem_trans_t sender_ = nullptr;
  std::vector<uint8_t> target_ = std::vector<uint8_t>(4u << 20);
  std::unique_ptr<hal::Stream> stream_;
};

TEST_P(TransStream, TransfersRunInStreamOrder) {
  const size_t half = target_.size() / 2;
  std::vector<uint8_t> source(half), back(half, 0), batch_back(half, 0);
  const uint64_t seed = fresh_seed();
  void* stream = stream_->native_handle();
  const char* peer = receiver_id_.c_str();
  // The source is filled by earlier stream work: the write must see it.
  stream_->host_function([&] { fill_random(source.data(), half, seed); });
  ASSERT_EQ(smem_trans_write_submit(sender_, source.data(), peer, target_.data(), half, stream, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  ASSERT_EQ(smem_trans_read_submit(sender_, back.data(), peer, target_.data(), half, stream, 0),
            SMEM_SUCCESS);
  // Batches: write 16 pieces into the second half, read them back as 16 pieces.
  std::vector<const void*> locals;
  std::vector<void*> remotes, read_locals;
  std::vector<const void*> read_remotes;
  std::vector<size_t> sizes(16, half / 16);
  for (size_t i = 0; i < 16; ++i) {
    locals.push_back(source.data() + i * (half / 16));
    remotes.push_back(target_.data() + half + i * (half / 16));
    read_locals.push_back(batch_back.data() + i * (half / 16));
    read_remotes.push_back(target_.data() + half + i * (half / 16));
  }
  ASSERT_EQ(smem_trans_batch_write_submit(sender_, locals.data(), peer, remotes.data(),
                                          sizes.data(), 16, stream, 0),
            SMEM_SUCCESS);
  ASSERT_EQ(smem_trans_batch_read_submit(sender_, read_locals.data(), peer, read_remotes.data(),
                                         sizes.data(), 16, stream, 0),
            SMEM_SUCCESS);
  // Later stream work sees the results.
  std::atomic<bool> seen_in_order{false};
  stream_->host_function([&] { seen_in_order = back == source && batch_back == source; });
  stream_->synchronize(soon());
  EXPECT_TRUE(seen_in_order.load());
  EXPECT_EQ(std::memcmp(target_.data(), source.data(), half), 0);
  EXPECT_EQ(std::memcmp(target_.data() + half, source.data(), half), 0);
}

TEST_P(TransStream, AFailureSurfacesWhenTheStreamIsSynchronized) {
  std::vector<uint8_t> extra(4096), data(4096, 3);
  ASSERT_EQ(smem_trans_register_mem(receiver_, extra.data(), extra.size(), 0), SMEM_SUCCESS);
  // Hold the stream until the region is gone, so the queued write meets a deregistered region.
  std::atomic<bool> release{false};
  stream_->host_function([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_EQ(smem_trans_write_submit(sender_, data.data(), receiver_id_.c_str(), extra.data(),
                                    extra.size(), stream_->native_handle(), 0),
            SMEM_SUCCESS);
  ASSERT_EQ(smem_trans_deregister_mem(receiver_, extra.data()), SMEM_SUCCESS);
  release = true;
  try {
    stream_->synchronize(soon());
    ADD_FAILURE() << "the failed transfer was not reported";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput) << error.what();
    EXPECT_NE(std::string(error.what()).find("not inside memory registered"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(extra, std::vector<uint8_t>(4096, 0));
}

TEST_P(TransStream, QueuedTransfersOutliveTheHandle) {
  std::vector<uint8_t> data(4096, 5);
  std::atomic<bool> release{false};
  stream_->host_function([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_EQ(smem_trans_write_submit(sender_, data.data(), receiver_id_.c_str(), target_.data(),
                                    data.size(), stream_->native_handle(), 0),
            SMEM_SUCCESS);
  smem_trans_destroy(sender_, 0);
  sender_ = nullptr;
  release = true;
  // The queued write runs after its instance was destroyed: an error, not a crash.
  EXPECT_THROW(stream_->synchronize(soon()), Error);
}

INSTANTIATE_TEST_SUITE_P(Paths, TransStream,
                         ::testing::Values(PathMode::kDirect, PathMode::kTcp, PathMode::kStaged),
                         [](const auto& info) { return path_name(info.param); });

}  // namespace
}  // namespace memloom::trans_test
