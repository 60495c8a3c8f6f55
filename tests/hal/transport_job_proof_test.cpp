// The transports serve only ranks of their job (hal::TransportOptions::job_secret): both ends of a
// connection prove they know the secret before any request is served (hw/host/job_proof.h). The
// first suite runs on the TCP and on the UCX transport (tests/hal/CMakeLists.txt runs every
// "*Transport*" suite both ways); TcpJobProof speaks the TCP transport's hello on raw sockets, as
// an outsider who knows the protocol but not the secret would.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "hw/host/job_proof.h"
#include "hw/host/tcp_transport.h"
#include "hw/host/tcp_wire.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_messages.h"
#include "hw/host/ucx_transport.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"
#include "src/base/unique_fd.h"
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

// A raw connection to a TCP transport endpoint.
class RawConnection {
 public:
  explicit RawConnection(const std::string& address) {
    host::wire::Endpoint endpoint = host::wire::parse_tcp_url(address);
    fd_ = base::UniqueFd(::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(fd_.valid());
    EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&endpoint.address), endpoint.length),
              0)
        << std::strerror(errno);
    host::wire::set_nonblocking(fd_.get());
  }
  int fd() const { return fd_.get(); }
  bool send(const void* data, size_t bytes) {
    return host::wire::write_exact(fd_.get(), data, bytes, soon());
  }
  bool receive(void* data, size_t bytes) {
    return host::wire::read_exact(fd_.get(), data, bytes, soon());
  }
  // A read of `bytes` at `address`, as a member would send it after the hello; true if served.
  bool read_served(uint64_t address, uint64_t bytes) {
    host::wire::RequestHeader request{host::wire::kRequestMagic, 1, 7, 0, bytes};
    host::wire::OpDescriptor op{address, bytes, host::wire::kOpRead, 0};
    host::wire::ResponseHeader response{};
    return send(&request, sizeof(request)) && send(&op, sizeof(op)) &&
           receive(&response, sizeof(response)) && response.status == 0;
  }

 private:
  base::UniqueFd fd_;
};

host::Nonce nonce_of(const uint8_t* bytes) {
  host::Nonce nonce{};
  std::memcpy(nonce.data(), bytes, nonce.size());
  return nonce;
}

TEST(TcpJobProof, NothingIsServedWithoutAValidFreshProof) {
  const hal::TransportOptions options = job(5);
  std::vector<uint8_t> exposed(4096, 0x44);  // outlives the server
  host::TcpTransport server(options);
  server.expose(exposed.data(), exposed.size());
  const uint64_t target = address_of(exposed);

  {  // A request without the hello.
    RawConnection raw(server.address());
    host::wire::ServerHello hello{};
    ASSERT_TRUE(raw.receive(&hello, sizeof(hello)));
    EXPECT_EQ(hello.magic, host::wire::kHelloMagic);
    EXPECT_FALSE(raw.read_served(target, 64));
  }
  {  // A made-up proof.
    RawConnection raw(server.address());
    host::wire::ServerHello hello{};
    ASSERT_TRUE(raw.receive(&hello, sizeof(hello)));
    host::wire::RequesterProof proof{host::wire::kHelloMagic, 0, {}, {}};
    std::memset(proof.proof, 7, sizeof(proof.proof));
    host::wire::ServerVerdict verdict{};
    ASSERT_TRUE(raw.send(&proof, sizeof(proof)));
    if (raw.receive(&verdict, sizeof(verdict))) {
      EXPECT_NE(verdict.status, 0u);
    }
    EXPECT_FALSE(raw.read_served(target, 64));
  }
  // A member's proof (the test knows the secret) is served; replayed on a new connection, whose
  // server nonce differs, it is not.
  const host::Nonce nonce = host::random_nonce();
  host::wire::RequesterProof proof{host::wire::kHelloMagic, 0, {}, {}};
  std::memcpy(proof.nonce, nonce.data(), nonce.size());
  host::wire::ServerHello first_hello{};
  RawConnection first(server.address());
  ASSERT_TRUE(first.receive(&first_hello, sizeof(first_hello)));
  const host::Proof valid = host::prove(options.job_secret, host::ProofRole::kRequester,
                                        server.address(), nonce, nonce_of(first_hello.nonce));
  std::memcpy(proof.proof, valid.data(), valid.size());
  host::wire::ServerVerdict verdict{};
  ASSERT_TRUE(first.send(&proof, sizeof(proof)));
  ASSERT_TRUE(first.receive(&verdict, sizeof(verdict)));
  EXPECT_EQ(verdict.status, 0u);
  EXPECT_TRUE(host::proof_matches(host::prove(options.job_secret, host::ProofRole::kServer,
                                              server.address(), nonce, nonce_of(first_hello.nonce)),
                                  verdict.proof))
      << "the server's proof";
  EXPECT_TRUE(first.read_served(target, 64)) << "a member's read";

  RawConnection second(server.address());
  host::wire::ServerHello second_hello{};
  ASSERT_TRUE(second.receive(&second_hello, sizeof(second_hello)));
  EXPECT_NE(nonce_of(second_hello.nonce), nonce_of(first_hello.nonce));
  ASSERT_TRUE(second.send(&proof, sizeof(proof)));
  if (second.receive(&verdict, sizeof(verdict))) {
    EXPECT_NE(verdict.status, 0u);
  }
  EXPECT_FALSE(second.read_served(target, 64)) << "a replayed proof was accepted";
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x44));
}

TEST(TcpJobProof, SilentConnectionsAreDroppedAndKeepNoRankOut) {
  constexpr int kSilent = 300;  // more than the server lets wait at once (256)
  const hal::TransportOptions options = job(6);
  std::vector<uint8_t> exposed(1 << 16, 0);  // outlives the server
  host::TcpTransport server(options);
  host::TcpTransport member(options);
  server.expose(exposed.data(), exposed.size());

  const auto opened = Clock::now();
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < kSilent; ++i)
    silent.push_back(std::make_unique<RawConnection>(server.address()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server accepts them

  std::vector<uint8_t> data(exposed.size(), 0x5A);
  const auto start = Clock::now();
  member.transfer(server.address(),
                  {{Direction::kWrite, address_of(exposed), data.data(), data.size()}}, soon());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(exposed, data);

  // Each is closed by its proof deadline (5 s), or evicted sooner; a margin on top.
  const auto limit = opened + std::chrono::seconds(8);
  size_t closed = 0;
  std::vector<bool> seen(silent.size(), false);
  while (closed < silent.size() && Clock::now() < limit) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < silent.size(); ++i) {
      if (seen[i]) continue;
      fds.push_back(pollfd{silent[i]->fd(), POLLIN, 0});
      index.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      char buffer[sizeof(host::wire::ServerHello)];
      const ssize_t n = ::recv(fds[k].fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN)) {  // the hello alone is not a close
        seen[index[k]] = true;
        ++closed;
      }
    }
  }
  EXPECT_EQ(closed, silent.size()) << "silent connections still open 8 s after they were made";
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

}  // namespace
}  // namespace memloom
