// The transport serves only ranks of its job (hal::TransportOptions::job_secret): both ends of a
// connection prove they know the secret before any request is served (hw/host/ucx_job_gate.h).
// UcxJobProof opens endpoints of its own, as an outsider who knows the protocol but not the secret
// would.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_messages.h"
#include "hw/host/ucx_transport.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"
#include "tests/hal/forked_transport_peer.h"
#include "tests/hal/ucx_outsider_endpoint.h"

namespace memloom {
namespace {

using Clock = std::chrono::steady_clock;
using Direction = hal::TransferOp::Direction;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(10));
}

hal::TransportOptions job(uint8_t fill) {
  hal::TransportOptions options;
  options.job_secret.fill(fill);
  return options;
}

uint64_t address_of(const std::vector<uint8_t>& memory) {
  return reinterpret_cast<uint64_t>(memory.data());
}

TEST(TransportJobProof, OnlyRanksOfTheSameJobAreServed) {
  std::vector<uint8_t> exposed(4096, 0x11);  // outlives the server
  auto server = emulated::create_transport(job(1));
  server->expose(exposed.data(), exposed.size());
  std::vector<uint8_t> data(exposed.size(), 0x22);

  auto stranger = emulated::create_transport(job(2));
  for (Direction direction : {Direction::kWrite, Direction::kRead}) {
    try {
      stranger->transfer(server->address(),
                         {{direction, address_of(exposed), data.data(), data.size()}}, soon());
      ADD_FAILURE() << "a rank of another job was served";
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
      EXPECT_NE(std::string(error.what()).find("job"), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(exposed, std::vector<uint8_t>(exposed.size(), 0x11));
  EXPECT_EQ(data, std::vector<uint8_t>(exposed.size(), 0x22));

  // A server of another job is refused by the requester too (it cannot prove the secret).
  auto member = emulated::create_transport(job(1));
  auto impostor = emulated::create_transport(job(3));
  std::vector<uint8_t> theirs(4096, 0x33);
  impostor->expose(theirs.data(), theirs.size());
  EXPECT_THROW(member->transfer(impostor->address(),
                                {{Direction::kRead, address_of(theirs), data.data(), 64}}, soon()),
               Error);
  EXPECT_EQ(data, std::vector<uint8_t>(exposed.size(), 0x22));

  // The server still serves the job's own ranks.
  member->transfer(server->address(),
                   {{Direction::kWrite, address_of(exposed), data.data(), data.size()}}, soon());
  EXPECT_EQ(exposed, data);
}

// An endpoint that skips the proof and asks the UCX transport for a remote key straight away (what
// an outsider who knows memloom's messages would do) gets a refusal, not the key.
TEST(UcxJobProof, RegionRequestsOfUnprovenEndpointsAreRefused) {
  host::UcxTransport server(job(7));
  std::vector<uint8_t> exposed(4096, 0x66);
  server.expose(exposed.data(), exposed.size());
  const std::string address = server.address();  // ucx://127.0.0.1:PORT

  host::UcxWorker worker;
  struct Reply {
    bool answered = false;
    uint32_t status = 0;
    size_t tail_bytes = 0;
  } reply;
  const host::ucx_messages::Registration registration{
      [](void* arg, const void* data, size_t length, ucp_ep_h) {
        auto header =
            host::ucx_messages::decode<host::ucx_messages::RegionReplyHeader>(data, length);
        if (!header) return;
        auto* out = static_cast<Reply*>(arg);
        out->status = header->status;
        out->tail_bytes = length - sizeof(*header);
        out->answered = true;
      },
      &reply};
  host::ucx_messages::set_handler(worker.worker(), host::ucx_messages::kRegionReply, &registration);
  {
    host::UcxEndpoints endpoints(worker, [](ucp_ep_h) {});
    auto peer = hal_test::connect_as_outsider(endpoints, address);
    host::ucx_messages::send(
        peer->ep(), host::ucx_messages::kRegionRequest,
        host::ucx_messages::encode(host::ucx_messages::RegionRequest{1, address_of(exposed), 64}),
        /*reply=*/true);
    ASSERT_TRUE(worker.progress_until([&] { return reply.answered || peer->failed(); }, soon()));
    ASSERT_TRUE(reply.answered) << "the server did not answer";
    EXPECT_EQ(reply.status, static_cast<uint32_t>(Status::kCommunication));
    EXPECT_NE(reply.tail_bytes, 0u) << "the refusal's message";
    peer.reset();
    endpoints.close_all();
  }
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x66));
}

// A member of one job and an outsider's endpoints that never give the job proof, to a server of
// that job in another process (`run`): the server closes and accepts endpoints fast, and UCX
// (1.16 seen on the GPU image, 1.13 likewise) aborts a process with several workers when one's
// closed socket descriptor is reused under another ("async.c:624 Assertion `handler->async ==
// async' failed").
struct SilentEndpointsScene {
  SilentEndpointsScene(uint8_t secret, const std::string& server_address, uint64_t exposed_at,
                       size_t exposed_bytes)
      : address(server_address),
        exposed_at(exposed_at),
        exposed_bytes(exposed_bytes),
        member(job(secret)) {}
  ~SilentEndpointsScene() {
    silent.clear();
    endpoints.close_all();
  }
  // Runs `body` against a server of the job `secret` with `exposed_bytes` exposed.
  static void run(uint8_t secret, size_t exposed_bytes,
                  const std::function<void(SilentEndpointsScene&)>& body) {
    hal_test::run_against_forked_peer(
        [&](pid_t, const std::string& address, uint64_t pointer) {
          SilentEndpointsScene scene(secret, address, pointer, exposed_bytes);
          body(scene);
        },
        exposed_bytes, job(secret));
  }
  void connect_silent(size_t index) {
    silent.push_back(hal_test::connect_as_outsider(endpoints, address, index));
  }
  // How many of silent[from, to) the server closed.
  size_t closed(size_t from, size_t to) const {
    size_t count = 0;
    for (size_t i = from; i < to; ++i) count += silent[i]->failed() ? 1 : 0;
    return count;
  }
  size_t closed() const { return closed(0, silent.size()); }
  // The member writes the whole exposed memory with `fill`, then reads it back.
  std::vector<uint8_t> member_writes(uint8_t fill) {
    std::vector<uint8_t> data(exposed_bytes, fill), seen(exposed_bytes);
    member.transfer(address, {{Direction::kWrite, exposed_at, data.data(), data.size()}}, soon());
    member.transfer(address, {{Direction::kRead, exposed_at, seen.data(), seen.size()}}, soon());
    return seen;
  }

  const std::string address;
  const uint64_t exposed_at;
  const size_t exposed_bytes;
  host::UcxTransport member;
  host::UcxWorker worker;
  host::UcxEndpoints endpoints{worker, [](ucp_ep_h) {}};
  std::vector<std::shared_ptr<host::UcxPeer>> silent;
};

// Endpoints that never give the job proof are closed by the owner after 5 s (the proof deadline,
// checked about once a second), and while they wait a rank of the job is served at once.
TEST(UcxJobProof, SilentEndpointsAreClosedAndKeepNoRankOut) {
  SilentEndpointsScene::run(6, 1 << 16, [](SilentEndpointsScene& scene) {
    constexpr int kSilent = 20;
    for (int i = 0; i < kSilent; ++i) scene.connect_silent(i);
    // Their connection requests reach the server.
    scene.worker.progress_until([] { return false; },
                                Deadline::after(std::chrono::milliseconds(300)));

    const auto start = Clock::now();
    EXPECT_EQ(scene.member_writes(0x5A), std::vector<uint8_t>(scene.exposed_bytes, 0x5A));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));

    EXPECT_EQ(scene.closed(), 0u) << "closed before their proof deadline";
    // The deadline (5 s), the housekeeping period (1 s) and a margin.
    scene.worker.progress_until([&] { return scene.closed() == scene.silent.size(); },
                                Deadline::after(std::chrono::seconds(10)));
    EXPECT_EQ(scene.closed(), scene.silent.size())
        << "silent endpoints still open 10 s after they were made";
  });
}

// More than kMaxUnproven endpoints waiting for their proof: each one beyond closes the oldest at
// once (long before the proof deadline), the others stay until theirs, and a rank of the job is
// still served.
TEST(UcxJobProof, BeyondTheUnprovenLimitTheOldestWaitingEndpointsAreClosedAtOnce) {
  SilentEndpointsScene::run(7, 4096, [](SilentEndpointsScene& scene) {
    constexpr size_t kLimit = host::UcxEndpoints::kMaxUnproven;
    constexpr size_t kBeyond = 4;
    const auto first_made = Clock::now();
    for (size_t i = 0; i < kLimit + kBeyond; ++i) {
      scene.connect_silent(i);
      // One at a time reaches the server, so "oldest" is the order they were made in.
      scene.worker.progress_until([] { return false; },
                                  Deadline::after(std::chrono::milliseconds(2)));
    }
    // Before the first one's proof deadline, only the limit can have closed any.
    const auto deadline_of_the_first =
        first_made + host::UcxEndpoints::kProofTimeout - std::chrono::milliseconds(200);
    if (Clock::now() + std::chrono::seconds(1) > deadline_of_the_first) {
      GTEST_SKIP() << "making the endpoints took nearly the proof deadline: nothing to tell apart";
    }
    scene.worker.progress_until(
        [&] { return scene.closed(0, kBeyond) == kBeyond; },
        Deadline::after(std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline_of_the_first - Clock::now())));
    EXPECT_EQ(scene.closed(0, kBeyond), kBeyond)
        << "the oldest were not closed once the limit passed";
    EXPECT_EQ(scene.closed(kBeyond, scene.silent.size()), 0u)
        << "younger ones closed before their deadline";

    EXPECT_EQ(scene.member_writes(0x3C), std::vector<uint8_t>(scene.exposed_bytes, 0x3C));
  });
}

}  // namespace
}  // namespace memloom
