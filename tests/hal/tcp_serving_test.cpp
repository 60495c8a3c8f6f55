// The TCP transport serves peers side by side: a peer that stalls in the middle of a batch holds
// up only the serving thread answering it, not other peers, and not the server's shutdown; and
// transfers of one process to one peer run on connections of their own, so a small one does not
// wait behind a slow one; but a write still being applied lands before a later overlapping one.
// A transfer that must not wait gets a deadline (4 s) well below the stall timeout of the serving
// side (10 s), so waiting behind the stall fails it. The suite is not named *Transport*: it builds
// the TCP transport itself, so the ucx.* runs leave it out.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hw/host/buffer_staging.h"
#include "hw/host/tcp_transport.h"
#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/unique_fd.h"

namespace memloom {
namespace {

using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;

constexpr auto kMustNotWait = std::chrono::seconds(4);  // the stall timeout is 10 s

hal::TransportOptions job() {
  hal::TransportOptions options;
  options.job_secret.fill(7);
  return options;
}

// A member of the job that starts a 1 MiB write into `target` on `server`, sends a part of it,
// and then stalls, keeping the connection open.
class StalledPeer {
 public:
  StalledPeer(const std::string& server, void* target) {
    host::wire::Endpoint endpoint = host::wire::parse_tcp_url(server);
    fd_ = base::UniqueFd(::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&endpoint.address), endpoint.length),
              0)
        << std::strerror(errno);
    host::wire::set_nonblocking(fd_.get());
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    host::wire::prove_membership(fd_.get(), server, job().job_secret, deadline);
    constexpr uint64_t kBytes = 1 << 20;
    host::wire::RequestHeader header{host::wire::kRequestMagic, 1, 1, kBytes, 0};
    host::wire::OpDescriptor op{reinterpret_cast<uint64_t>(target), kBytes, host::wire::kOpWrite,
                                0};
    std::vector<char> part(4096, 'x');
    EXPECT_TRUE(host::wire::write_exact(fd_.get(), &header, sizeof(header), deadline));
    EXPECT_TRUE(host::wire::write_exact(fd_.get(), &op, sizeof(op), deadline));
    EXPECT_TRUE(host::wire::write_exact(fd_.get(), part.data(), part.size(), deadline));
    // The request is the server's to read now; give its poll thread a moment to hand it to a
    // serving thread, which then waits for the rest of the payload.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }

 private:
  base::UniqueFd fd_;
};

TEST(TcpServing, AStalledPeerHoldsUpNoOtherPeer) {
  std::vector<char> stalled_target(1 << 20), target(64 << 10, 0);  // outlive the server
  host::TcpTransport server(job());
  server.expose(stalled_target.data(), stalled_target.size());
  server.expose(target.data(), target.size());
  StalledPeer stalled(server.address(), stalled_target.data());

  host::TcpTransport requester(job());
  std::vector<char> source(target.size(), 'a');
  Op write{Direction::kWrite, reinterpret_cast<uint64_t>(target.data()), source.data(),
           source.size()};
  ASSERT_NO_THROW(requester.transfer(server.address(), {write}, Deadline::after(kMustNotWait)));
  EXPECT_EQ(target, source);
}

TEST(TcpServing, AServerStopsPromptlyWhileAPeerStalls) {
  std::vector<char> stalled_target(1 << 20);
  auto server = std::make_unique<host::TcpTransport>(job());
  server->expose(stalled_target.data(), stalled_target.size());
  StalledPeer stalled(server->address(), stalled_target.data());
  auto stopped = std::async(std::launch::async, [&] { server.reset(); });
  EXPECT_EQ(stopped.wait_for(kMustNotWait), std::future_status::ready)
      << "the server waited for the stalled peer to stop";
  stopped.wait();
}

// Host memory that the transport must treat as device memory (moved through copy()), whose
// first copy waits until the test opens the gate (later copies go through).
class GatedStaging : public host::BufferStaging {
 public:
  GatedStaging(const void* gated, size_t bytes)
      : gated_(static_cast<const char*>(gated)), bytes_(bytes) {}

  bool needs_staging(const void* pointer) const override {
    auto* p = static_cast<const char*>(pointer);
    return p >= gated_ && p < gated_ + bytes_;
  }
  void copy(void* to, const void* from, size_t bytes, Deadline) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool first = !entered_;
    entered_ = true;
    changed_.notify_all();
    if (first) changed_.wait(lock, [&] { return open_; });
    std::memcpy(to, from, bytes);
  }
  void* allocate_host(size_t bytes) override { return ::operator new(bytes); }
  void free_host(void* buffer) noexcept override { ::operator delete(buffer); }

  bool wait_until_entered() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  const char* gated_;
  size_t bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false, open_ = false;
};

TEST(TcpServing, TransfersToOnePeerRunSideBySide) {
  std::vector<char> gated(4096, 0), plain(4096, 0);
  auto staging = std::make_unique<GatedStaging>(gated.data(), gated.size());
  GatedStaging& gate = *staging;
  host::TcpTransport server(job(), std::move(staging));
  server.expose(gated.data(), gated.size());
  server.expose(plain.data(), plain.size());
  host::TcpTransport requester(job());

  // The first transfer's batch waits in the server's staging copy until the gate opens.
  std::vector<char> slow_source(gated.size(), 's');
  auto slow = std::async(std::launch::async, [&] {
    Op write{Direction::kWrite, reinterpret_cast<uint64_t>(gated.data()), slow_source.data(),
             slow_source.size()};
    requester.transfer(server.address(), {write}, Deadline::after(std::chrono::seconds(30)));
  });
  ASSERT_TRUE(gate.wait_until_entered());

  // The second, from another thread of the same process to the same peer, does not wait for it.
  std::vector<char> source(plain.size(), 'p');
  Op write{Direction::kWrite, reinterpret_cast<uint64_t>(plain.data()), source.data(),
           source.size()};
  EXPECT_NO_THROW(requester.transfer(server.address(), {write}, Deadline::after(kMustNotWait)));
  EXPECT_EQ(plain, source);
  EXPECT_EQ(slow.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the first transfer ended before its gate opened";

  gate.open();
  EXPECT_NO_THROW(slow.get());
  EXPECT_EQ(gated, slow_source);
}

// A write that is still being applied (here: held in the serving side's staging copy; in life, an
// abandoned write whose payload the server is still draining) lands before a later write to the
// same memory that another connection brings, so the later one is what stays.
TEST(TcpServing, AWriteInProgressLandsBeforeALaterOverlappingOne) {
  std::vector<char> gated(4096, 0);
  auto staging = std::make_unique<GatedStaging>(gated.data(), gated.size());
  GatedStaging& gate = *staging;
  host::TcpTransport server(job(), std::move(staging));
  server.expose(gated.data(), gated.size());
  host::TcpTransport requester(job());
  std::vector<char> earlier_bytes(gated.size(), 'e'), later_bytes(gated.size(), 'l');
  auto write = [&](std::vector<char>& source) {
    Op op{Direction::kWrite, reinterpret_cast<uint64_t>(gated.data()), source.data(),
          source.size()};
    requester.transfer(server.address(), {op}, Deadline::after(std::chrono::seconds(30)));
  };

  auto earlier = std::async(std::launch::async, [&] { write(earlier_bytes); });
  ASSERT_TRUE(gate.wait_until_entered());
  auto later = std::async(std::launch::async, [&] { write(later_bytes); });
  EXPECT_EQ(later.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a later overlapping write completed while an earlier one was still being applied";
  gate.open();
  EXPECT_NO_THROW(earlier.get());
  EXPECT_NO_THROW(later.get());
  EXPECT_EQ(gated, later_bytes);
}

}  // namespace
}  // namespace memloom
