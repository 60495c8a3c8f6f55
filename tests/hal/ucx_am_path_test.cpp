// The UCX transport's active-message data path (hw/host/ucx_am_requests.h, ucx_am_server.h),
// whatever UCX finds here: the requester is forced onto it with MEMLOOM_UCX_DATA_PATH=am, the
// server serves it always. The transport conformance tests (transport_test.cpp) run on it too
// wherever UCX has no RDMA transport; these check what only this path does: the owner checks
// every range itself, copies in place, and keeps withdraw() safe against its own copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_messages.h"
#include "hw/host/ucx_transport.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"
#include "tests/hal/ucx_outsider_endpoint.h"
#include "tests/support/scoped_env.h"
#include "tests/support/status_of.h"

namespace memloom {
namespace {

using Direction = hal::TransferOp::Direction;
using ::memloom::testing::status_of;
namespace msg = host::ucx_messages;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 random(seed);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(random());
  return out;
}

uint64_t address_of(const void* memory) {
  return reinterpret_cast<uint64_t>(memory);
}

// A requester on the active-message path and a server, in this process.
class UcxAmPath : public ::testing::Test {
 protected:
  std::unique_ptr<host::UcxTransport> requester() {
    test::ScopedEnv path("MEMLOOM_UCX_DATA_PATH", std::string("am"));
    return std::make_unique<host::UcxTransport>();
  }
  std::unique_ptr<host::UcxTransport> client = requester();
  host::UcxTransport server;
};

TEST_F(UcxAmPath, RangesOutsideEveryExposedRegionAreRefusedAndNothingMoves) {
  std::vector<uint8_t> exposed(4096, 0x11), beside(4096, 0x22);
  server.expose(exposed.data(), exposed.size());
  std::vector<uint8_t> data(size_t{2} << 20, 0x33);
  const std::vector<hal::TransferOp> refused[] = {
      // Past the end of the region, wholly outside it, and a batch whose second op is outside.
      {{Direction::kWrite, address_of(exposed.data()) + 4000, data.data(), 200}},
      {{Direction::kWrite, address_of(beside.data()), data.data(), 64}},
      {{Direction::kRead, address_of(beside.data()), data.data(), 64}},
      {{Direction::kWrite, address_of(exposed.data()), data.data(), 64},
       {Direction::kWrite, address_of(exposed.data()) + 4090, data.data() + 64, 64}},
      // Larger than a chunk: refused without its rendezvous data being received.
      {{Direction::kWrite, address_of(exposed.data()), data.data(), data.size()}},
  };
  for (const auto& ops : refused) {
    EXPECT_EQ(status_of([&] { client->transfer(server.address(), ops, soon()); }),
              Status::kInvalidInput);
  }
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x11));
  EXPECT_EQ(beside, std::vector<uint8_t>(4096, 0x22));
  EXPECT_EQ(data, std::vector<uint8_t>(data.size(), 0x33));
  // The endpoint survives a refusal.
  client->transfer(server.address(),
                   {{Direction::kWrite, address_of(exposed.data()), data.data(), 4096}}, soon());
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x33));
}

TEST_F(UcxAmPath, ABatchOf1024Writes4KiBEachLandsByteExact) {
  constexpr size_t kOps = 1024, kBytes = 4096, kStride = 8192;
  std::vector<uint8_t> exposed(kOps * kStride, 0);
  server.expose(exposed.data(), exposed.size());
  const std::vector<uint8_t> source = random_bytes(kOps * kStride, 5);
  std::vector<hal::TransferOp> ops;
  for (size_t i = 0; i < kOps; ++i) {
    // Op i writes source slot i to remote slot (i * 7) % kOps: no two ops land side by side.
    ops.push_back({Direction::kWrite, address_of(exposed.data() + (i * 7 % kOps) * kStride),
                   const_cast<uint8_t*>(source.data() + i * kStride), kBytes});
  }
  client->transfer(server.address(), ops, soon());
  for (size_t i = 0; i < kOps; ++i) {
    const uint8_t* landed = exposed.data() + (i * 7 % kOps) * kStride;
    ASSERT_EQ(std::memcmp(landed, source.data() + i * kStride, kBytes), 0) << "op " << i;
    ASSERT_EQ(std::vector<uint8_t>(landed + kBytes, landed + kStride),
              std::vector<uint8_t>(kStride - kBytes, 0))
        << "bytes past op " << i;
  }
  std::vector<uint8_t> back(kOps * kBytes, 0);
  for (size_t i = 0; i < kOps; ++i) {
    ops[i] = {Direction::kRead, ops[i].remote_address, back.data() + i * kBytes, kBytes};
  }
  client->transfer(server.address(), ops, soon());
  for (size_t i = 0; i < kOps; ++i) {
    ASSERT_EQ(std::memcmp(back.data() + i * kBytes, source.data() + i * kStride, kBytes), 0)
        << "read " << i;
  }
}

// Writes from scattered buffers into one range, and reads back: the requester packs or unpacks,
// and the owner, whose ranges continue one another, receives into or sends from its memory
// straight (UcxAmServer's stage()).
TEST_F(UcxAmPath, WritesAndReadsBetweenScatteredBuffersAndOneRangeAreByteExact) {
  constexpr size_t kOps = 1024, kBytes = 4096;
  std::vector<uint8_t> exposed(kOps * kBytes + 2 * kBytes, 0xee);
  server.expose(exposed.data(), exposed.size());
  uint8_t* const first = exposed.data() + kBytes;  // a guard slot on either side
  const std::vector<uint8_t> source = random_bytes(kOps * kBytes, 13);
  std::vector<hal::TransferOp> ops;
  for (size_t i = 0; i < kOps; ++i) {
    ops.push_back({Direction::kWrite, address_of(first + i * kBytes),
                   const_cast<uint8_t*>(source.data() + (i * 37 % kOps) * kBytes), kBytes});
  }
  client->transfer(server.address(), ops, soon());
  for (size_t i = 0; i < kOps; ++i) {
    ASSERT_EQ(std::memcmp(first + i * kBytes, source.data() + (i * 37 % kOps) * kBytes, kBytes), 0)
        << "op " << i;
  }
  EXPECT_EQ(std::count(exposed.begin(), exposed.begin() + kBytes, 0xee), kBytes);
  EXPECT_EQ(std::count(exposed.end() - kBytes, exposed.end(), 0xee), kBytes);
  // Read back the same way: the owner sends from its memory straight, the requester unpacks.
  std::vector<uint8_t> back(kOps * kBytes, 0);
  for (size_t i = 0; i < kOps; ++i) {
    ops[i] = {Direction::kRead, ops[i].remote_address, back.data() + (i * 37 % kOps) * kBytes,
              kBytes};
  }
  client->transfer(server.address(), ops, soon());
  EXPECT_EQ(back, source);
}

// A request's ranges share one hold on their region while they stay in it
// (UcxRegionRegistry::Hold); ranges that alternate between regions, and one that runs past its
// region's end, are each judged by the region they fall in.
TEST_F(UcxAmPath, ABatchAlternatingBetweenTwoRegionsLandsInBothAndAStraddlingOpIsRefused) {
  constexpr size_t kOps = 64, kBytes = 256;
  std::vector<uint8_t> first(kOps * kBytes, 0), second(kOps * kBytes, 0);
  server.expose(first.data(), first.size());
  server.expose(second.data(), second.size());
  const std::vector<uint8_t> source = random_bytes(2 * kOps * kBytes, 11);
  std::vector<hal::TransferOp> ops;
  for (size_t i = 0; i < 2 * kOps; ++i) {
    uint8_t* region = i % 2 == 0 ? first.data() : second.data();
    ops.push_back({Direction::kWrite, address_of(region + i / 2 * kBytes),
                   const_cast<uint8_t*>(source.data() + i * kBytes), kBytes});
  }
  client->transfer(server.address(), ops, soon());
  for (size_t i = 0; i < 2 * kOps; ++i) {
    const uint8_t* landed = (i % 2 == 0 ? first.data() : second.data()) + i / 2 * kBytes;
    ASSERT_EQ(std::memcmp(landed, source.data() + i * kBytes, kBytes), 0) << "op " << i;
  }
  const std::vector<uint8_t> first_before = first, second_before = second;
  // The last op starts in the first region's last slot and runs 1 byte past its end.
  ops.back() = {Direction::kWrite, address_of(first.data() + (kOps - 1) * kBytes),
                const_cast<uint8_t*>(source.data()), kBytes + 1};
  std::reverse(ops.begin(), ops.end());  // the refused op first: nothing of its message moves
  EXPECT_EQ(status_of([&] { client->transfer(server.address(), ops, soon()); }),
            Status::kInvalidInput);
  EXPECT_EQ(first, first_before);
  EXPECT_EQ(second, second_before);
}

// UCX may send a request by rendezvous even with no payload (a read's header of many descriptors
// beyond its eager size: UCX 1.16 over shared memory; UCX_RNDV_THRESH=0 makes 1.13 do the same).
// The owner serves it rather than take it for a read that carries data.
TEST(UcxAmPathRendezvous, ReadRequestsSentByRendezvousAreServed) {
  test::ScopedEnv path(
      {{"MEMLOOM_UCX_DATA_PATH", std::string("am")}, {"UCX_RNDV_THRESH", std::string("0")}});
  host::UcxTransport server, client;
  constexpr size_t kOps = 512, kBytes = 64;
  std::vector<uint8_t> exposed = random_bytes(kOps * kBytes * 2, 9);
  server.expose(exposed.data(), exposed.size());
  std::vector<uint8_t> back(kOps * kBytes, 0);
  std::vector<hal::TransferOp> ops;
  for (size_t i = 0; i < kOps; ++i) {
    ops.push_back({Direction::kRead, address_of(exposed.data() + i * 2 * kBytes),
                   back.data() + i * kBytes, kBytes});
  }
  client.transfer(server.address(), ops, soon());
  for (size_t i = 0; i < kOps; ++i) {
    ASSERT_EQ(std::memcmp(back.data() + i * kBytes, exposed.data() + i * 2 * kBytes, kBytes), 0)
        << "read " << i;
  }
}

TEST_F(UcxAmPath, A64MiBWriteAndReadAreByteExact) {
  constexpr size_t kBytes = size_t{64} << 20;
  std::vector<uint8_t> exposed(kBytes + 4096, 0);
  server.expose(exposed.data(), exposed.size());
  const std::vector<uint8_t> data = random_bytes(kBytes, 9);
  client->transfer(server.address(),
                   {{Direction::kWrite, address_of(exposed.data()) + 4096,
                     const_cast<uint8_t*>(data.data()), kBytes}},
                   soon());
  ASSERT_EQ(std::memcmp(exposed.data() + 4096, data.data(), kBytes), 0);
  ASSERT_EQ(std::vector<uint8_t>(exposed.begin(), exposed.begin() + 4096),
            std::vector<uint8_t>(4096, 0));
  std::vector<uint8_t> back(kBytes, 0);
  client->transfer(server.address(),
                   {{Direction::kRead, address_of(exposed.data()) + 4096, back.data(), kBytes}},
                   soon());
  ASSERT_EQ(back, data);
}

TEST_F(UcxAmPath, AReadAfterAnOverlappingWriteInOneCallSeesTheWrite) {
  constexpr size_t kLarge = size_t{8} << 20;  // rendezvous: its bytes land after its header
  std::vector<uint8_t> exposed(kLarge, 0);
  server.expose(exposed.data(), exposed.size());
  for (uint32_t round = 0; round < 5; ++round) {
    const std::vector<uint8_t> large = random_bytes(kLarge, 100 + round);
    const std::vector<uint8_t> small = random_bytes(64, 200 + round);
    std::vector<uint8_t> tail(4096), head(64), again(64);
    client->transfer(
        server.address(),
        {{Direction::kWrite, address_of(exposed.data()), const_cast<uint8_t*>(large.data()),
          kLarge},
         // The end of the large write, read back eagerly in the same call.
         {Direction::kRead, address_of(exposed.data()) + kLarge - 4096, tail.data(), 4096},
         {Direction::kWrite, address_of(exposed.data()), const_cast<uint8_t*>(small.data()), 64},
         {Direction::kRead, address_of(exposed.data()), head.data(), 64},
         // A read into the buffer a later write sends from: the write sends what was read.
         {Direction::kRead, address_of(exposed.data()) + 4096, again.data(), 64},
         {Direction::kWrite, address_of(exposed.data()) + 8192, again.data(), 64}},
        soon());
    ASSERT_EQ(std::memcmp(tail.data(), large.data() + kLarge - 4096, 4096), 0) << round;
    ASSERT_EQ(head, small) << round;
    ASSERT_EQ(std::memcmp(exposed.data() + 8192, large.data() + 4096, 64), 0) << round;
  }
}

// A call checks its ops for overlaps once, sorted (ucx_transfer_order.h), and only
// then each op against those before it: a read of the first, rendezvous, write after many small
// ones in ascending order above it must still wait for that write.
TEST_F(UcxAmPath, AReadOverlappingTheFirstOpOfAnAscendingRunSeesItsWrite) {
  constexpr size_t kLarge = size_t{8} << 20;
  constexpr size_t kSmall = 64, kSmallOps = 100;
  std::vector<uint8_t> exposed(kLarge + kSmall * kSmallOps, 0);
  server.expose(exposed.data(), exposed.size());
  for (uint32_t round = 0; round < 5; ++round) {
    const std::vector<uint8_t> large = random_bytes(kLarge, 300 + round);
    const std::vector<uint8_t> small = random_bytes(kSmall, 400 + round);
    std::vector<uint8_t> back(4096);
    std::vector<hal::TransferOp> ops{{Direction::kWrite, address_of(exposed.data()),
                                      const_cast<uint8_t*>(large.data()), kLarge}};
    for (size_t i = 0; i < kSmallOps; ++i) {
      ops.push_back({Direction::kWrite, address_of(exposed.data()) + kLarge + i * kSmall,
                     const_cast<uint8_t*>(small.data()), kSmall});
    }
    ops.push_back({Direction::kRead, address_of(exposed.data()) + kLarge / 2, back.data(), 4096});
    client->transfer(server.address(), ops, soon());
    ASSERT_EQ(std::memcmp(back.data(), large.data() + kLarge / 2, 4096), 0) << round;
  }
}

TEST_F(UcxAmPath, WithdrawDuringAStreamOfTransfersEndsCleanlyAndLaterOnesAreRefused) {
  constexpr size_t kBytes = size_t{4} << 20;
  std::vector<uint8_t> exposed(kBytes, 0);
  server.expose(exposed.data(), exposed.size());
  std::atomic<bool> stop{false};
  std::atomic<int> served{0}, refused{0}, other{0};
  std::thread stream([&] {
    std::vector<uint8_t> data(kBytes, 0x5a), back(kBytes);
    while (!stop) {
      const Status status = status_of([&] {
        client->transfer(server.address(),
                         {{Direction::kWrite, address_of(exposed.data()), data.data(), kBytes},
                          {Direction::kRead, address_of(exposed.data()) + 64, back.data(), 4096},
                          {Direction::kWrite, address_of(exposed.data()) + 100, data.data(), 8}},
                         soon());
      });
      (status == Status::kSuccess ? served : status == Status::kInvalidInput ? refused : other)++;
    }
  });
  while (served < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server.withdraw(exposed.data());
  // From here no copy touches the memory: what is written now stays.
  std::memset(exposed.data(), 0xee, exposed.size());
  const int refused_before = refused;
  while (refused < refused_before + 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  stream.join();
  EXPECT_EQ(exposed, std::vector<uint8_t>(kBytes, 0xee));
  EXPECT_EQ(other, 0);
  std::vector<uint8_t> back(64);
  EXPECT_EQ(status_of([&] {
              client->transfer(server.address(),
                               {{Direction::kRead, address_of(exposed.data()), back.data(), 64}},
                               soon());
            }),
            Status::kInvalidInput);
}

// An endpoint that skips the job proof and sends the data path's messages straight away (what an
// outsider who knows memloom's messages would do) gets a refusal: no byte written, none read.
TEST_F(UcxAmPath, AnUnprovenEndpointIsServedNoData) {
  std::vector<uint8_t> exposed(4096, 0x66);
  server.expose(exposed.data(), exposed.size());
  const std::string address = server.address();  // ucx://127.0.0.1:PORT

  host::UcxWorker worker;
  struct Replies {
    int count = 0;
    uint32_t status[2] = {0, 0};
    size_t bytes[2] = {0, 0};
  } replies;
  msg::set_data_handler(
      worker.worker(), msg::kAmReply,
      [](void* arg, const void* header, size_t header_length, void*, size_t length,
         const ucp_am_recv_param_t*) -> ucs_status_t {
        auto* out = static_cast<Replies*>(arg);
        msg::AmReplyHeader reply{};
        if (header_length != sizeof(reply) || out->count >= 2) return UCS_OK;
        std::memcpy(&reply, header, sizeof(reply));
        out->status[out->count] = reply.status;
        out->bytes[out->count] = length;
        ++out->count;
        return UCS_OK;
      },
      &replies);
  std::vector<uint8_t> payload(64, 0x77);
  struct Request {
    msg::AmRequestHeader head;
    msg::AmRange range;
  };
  const Request write{{1, 1, 0}, {address_of(exposed.data()), 64}};
  const Request read{{2, 1, 0}, {address_of(exposed.data()), 64}};
  {
    host::UcxEndpoints endpoints(worker, [](ucp_ep_h) {});
    auto peer = hal_test::connect_as_outsider(endpoints, address);
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    std::vector<ucs_status_ptr_t> sends = {
        ucp_am_send_nbx(peer->ep(), msg::kAmWrite, &write, sizeof(write), payload.data(),
                        payload.size(), &param),
        ucp_am_send_nbx(peer->ep(), msg::kAmRead, &read, sizeof(read), nullptr, 0, &param)};
    ASSERT_TRUE(worker.progress_until([&] { return replies.count == 2 || peer->failed(); },
                                      Deadline::after(std::chrono::seconds(10))));
    for (ucs_status_ptr_t send : sends) {
      if (UCS_PTR_IS_PTR(send)) ucp_request_free(send);
    }
    ASSERT_EQ(replies.count, 2) << "the server did not answer";
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(replies.status[i], static_cast<uint32_t>(Status::kCommunication));
      EXPECT_NE(replies.bytes[i], 0u) << "the refusal's message";
      EXPECT_LT(replies.bytes[i], 1000u) << "a refusal, not the memory";
    }
    peer.reset();
    endpoints.close_all();
  }
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x66));
}

TEST(UcxDataPath, ABadValueNamesTheVariableAndTheAllowedValues) {
  test::ScopedEnv path("MEMLOOM_UCX_DATA_PATH", std::string("rdma"));
  try {
    host::UcxTransport transport;
    ADD_FAILURE() << "MEMLOOM_UCX_DATA_PATH=rdma was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    const std::string what = error.what();
    EXPECT_NE(what.find("MEMLOOM_UCX_DATA_PATH"), std::string::npos) << what;
    EXPECT_NE(what.find("auto, am or rma"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace memloom
