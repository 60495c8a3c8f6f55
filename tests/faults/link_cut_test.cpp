// A peer's links are cut while transfers to it run: the peer (alive) shuts down every connected
// TCP socket it has, as a broken network would. Every transfer of the initiator must end within its
// deadline, either with an error code and a message or (when the layer reconnected and retried)
// with the right bytes; nothing hangs, and both sides then shut down cleanly without leaking a
// descriptor. The test prints how many transfers failed and how many recovered.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_trans.h"
#include "src/core/group.h"
#include "tests/faults/process_audit.h"
#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

constexpr auto kDeadline = std::chrono::seconds(kCallTimeoutSeconds);
constexpr auto kCutAfter = std::chrono::milliseconds(80);
constexpr auto kKeepTrying = std::chrono::seconds(3);

// shutdown(SHUT_RDWR) on every connected TCP socket of this process; returns how many. The
// descriptors stay open: their owners must notice and close them.
int cut_tcp_links() {
  int cut = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    int domain = 0, type = 0;
    socklen_t length = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) continue;
    length = sizeof(int);
    ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length);
    if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof(peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++cut;
  }
  return cut;
}

// Rank 0 (node 0) transfers to rank 1 (node 1) in a loop; rank 1 cuts its links meanwhile.
struct LinkCutCase {
  std::function<void(const testing::RankContext&)> setup;
  std::function<CallResult()> transfer;  // rank 0's call aimed at rank 1; checks what it got
  std::function<CallResult()> verify;    // rank 0, at the end: a transfer whose data is checked
  std::function<void()> shutdown;
};

// A CallResult code no API uses: the call succeeded but moved the wrong bytes.
constexpr int kWrongData = -1000;

void expect_error_or_success(const CallResult& result, const char* what) {
  if (!result.failed()) return;
  EXPECT_NE(result.code, kWrongData) << what << ": " << result.message;
  EXPECT_FALSE(result.message.empty()) << what << ": code " << result.code;
  EXPECT_TRUE(result.code == SMEM_COMM_ERROR || result.code == SMEM_TIMEOUT ||
              result.code == static_cast<int>(Status::kCommunication) ||
              result.code == static_cast<int>(Status::kTimeout))
      << what << ": " << result.code << ": " << result.message;
}

void run_link_cut(const LinkCutCase& link_case) {
  JobAudit job;
  int done_pipe[2];
  ASSERT_EQ(::pipe(done_pipe), 0);
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.nodes = 2;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    RankAudit audit;
    link_case.setup(rank);
    store_barrier(rank.store_url, rank.job_id + "/ready", 2);
    if (rank.rank == 1) {
      std::this_thread::sleep_for(kCutAfter);
      EXPECT_GT(cut_tcp_links(), 0) << "rank 1 had no TCP link to cut";
      // Alive (its store link is cut too) until rank 0 is done.
      pollfd done{done_pipe[0], POLLIN, 0};
      EXPECT_EQ(::poll(&done, 1, 30000), 1) << "rank 0 never finished";
    } else {
      int failures = 0, calls = 0;
      const auto end = Clock::now() + kCutAfter + kKeepTrying;
      while (Clock::now() < end) {
        const auto start = Clock::now();
        CallResult result = link_case.transfer();
        EXPECT_LT(Clock::now() - start, kDeadline + kSlack) << "a transfer overran its deadline";
        expect_error_or_success(result, "transfer");
        ++calls;
        if (result.failed()) ++failures;
      }
      const auto start = Clock::now();
      expect_error_or_success(link_case.verify(), "final transfer");
      EXPECT_LT(Clock::now() - start, 2 * (kDeadline + kSlack));
      std::printf(
          "[link cut] %d transfers around the cut: %d failed with an error, %d succeeded "
          "with the right data\n",
          calls, failures, calls - failures);
      EXPECT_EQ(::write(done_pipe[1], "x", 1), 1);
    }
    const auto start = Clock::now();
    link_case.shutdown();
    EXPECT_LT(Clock::now() - start, kSlack) << "shutdown after the cut was slow";
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  ::close(done_pipe[0]);
  ::close(done_pipe[1]);
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

// Rank 0 writes `bytes` of `value` to the peer, reads them back and compares.
CallResult write_then_read_back(const std::function<int32_t(const void*, size_t)>& write,
                                const std::function<int32_t(void*, size_t)>& read, size_t bytes,
                                char value) {
  std::vector<char> out(bytes, value), back(bytes, 0);
  CallResult result = smem_result(write(out.data(), bytes));
  if (result.failed()) return result;
  result = smem_result(read(back.data(), bytes));
  if (result.failed()) return result;
  if (back != out) return {kWrongData, "read back differs from what was written"};
  return {};
}

TEST(LinkCut, TransWriteToAPeerWhoseLinksAreCut) {
  constexpr size_t kBytes = 4 << 20;
  smem_trans_t handle = nullptr;
  std::vector<char> memory(kBytes), local(kBytes, 1);
  std::string peer_id;
  char* peer_memory = nullptr;
  auto write = [&](const void* data, size_t bytes) {
    return smem_trans_write(handle, data, peer_id.c_str(), peer_memory, bytes, 0);
  };
  auto read = [&](void* data, size_t bytes) {
    return smem_trans_read(handle, data, peer_id.c_str(), peer_memory, bytes, 0);
  };
  run_link_cut({[&](const testing::RankContext& rank) {
                  smem_trans_config_t config;
                  smem_trans_config_init(&config);
                  config.role = SMEM_TRANS_BOTH;
                  config.initTimeout = kCallTimeoutSeconds;
                  ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
                  const std::string id = free_loopback_id();
                  handle = smem_trans_create(rank.store_url.c_str(), id.c_str(), &config);
                  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
                  ASSERT_EQ(smem_trans_register_mem(handle, memory.data(), kBytes, 0),
                            SMEM_SUCCESS);
                  if (rank.rank == 1) {
                    publish(rank.store_url, rank.job_id + "/peer",
                            id + " " + std::to_string(reinterpret_cast<uintptr_t>(memory.data())));
                    return;
                  }
                  const std::string text = await(rank.store_url, rank.job_id + "/peer");
                  peer_id = text.substr(0, text.find(' '));
                  peer_memory = reinterpret_cast<char*>(std::stoull(text.substr(text.find(' '))));
                  ASSERT_EQ(write(local.data(), kBytes), SMEM_SUCCESS) << smem_get_last_err_msg();
                },
                [&] { return smem_result(write(local.data(), kBytes)); },
                [&] { return write_then_read_back(write, read, 1 << 20, 0x77); },
                [&] {
                  smem_trans_destroy(handle, 0);
                  smem_trans_uninit(0);
                }});
}

TEST(LinkCut, BmCopyToAPeerWhoseLinksAreCut) {
  constexpr uint64_t kSlot = 4ull << 20;
  smem_bm_t bm = nullptr;
  char* peer_slot = nullptr;
  std::vector<char> local(kSlot, 2);
  auto copy = [&](const void* src, void* dst, size_t bytes, smem_bm_copy_type type) {
    smem_copy_params params{src, dst, bytes};
    return smem_bm_copy(bm, &params, type, 0);
  };
  auto write = [&](const void* data, size_t bytes) {
    return copy(data, peer_slot, bytes, SMEMB_COPY_H2G);
  };
  auto read = [&](void* data, size_t bytes) {
    return copy(peer_slot, data, bytes, SMEMB_COPY_G2H);
  };
  run_link_cut(
      {[&](const testing::RankContext& rank) {
         smem_bm_config_t config;
         smem_bm_config_init(&config);
         config.startConfigStoreServer = false;
         config.initTimeout = 20;
         config.createTimeout = 20;
         config.controlOperationTimeout = kCallTimeoutSeconds;
         config.rankId = static_cast<uint16_t>(rank.rank);
         config.autoRanking = false;
         ASSERT_EQ(smem_bm_init(rank.store_url.c_str(), 2, 0, &config), SMEM_SUCCESS)
             << smem_get_last_err_msg();
         bm = smem_bm_create(
             0, 2, static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP),
             0, kSlot, 0);
         ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
         ASSERT_EQ(smem_bm_join(bm, 0, nullptr), SMEM_SUCCESS);
         peer_slot = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, 1));
         store_barrier(rank.store_url, rank.job_id + "/joined", 2);
         if (rank.rank == 0) {
           ASSERT_EQ(write(local.data(), kSlot), SMEM_SUCCESS) << smem_get_last_err_msg();
         }
       },
       [&] { return smem_result(write(local.data(), kSlot)); },
       [&] { return write_then_read_back(write, read, 1 << 20, 0x66); },
       [&] {
         smem_bm_destroy(bm);
         smem_bm_uninit(0);
       }});
}

TEST(LinkCut, GroupAlltoallvAcrossNodesWhoseLinksAreCut) {
  std::shared_ptr<store::Client> client;
  std::shared_ptr<core::Group> group;
  constexpr size_t kBytes = 1 << 20;
  std::vector<std::byte> send(2 * kBytes), receive(2 * kBytes);
  std::vector<size_t> counts{kBytes, kBytes}, displs{0, kBytes};
  std::thread responder;
  std::atomic<bool> stop{false};
  // Each rank sends its own byte value; a successful call must deliver the peer's.
  auto alltoallv = [&] {
    const int me = group->rank();
    std::fill(send.begin(), send.end(), std::byte(0x10 + me));
    std::fill(receive.begin(), receive.end(), std::byte{0});
    CallResult result = core_call([&] {
      group->collectives().alltoallv(send.data(), counts.data(), displs.data(), receive.data(),
                                     counts.data(), displs.data(), Deadline::after(kDeadline));
    });
    const auto from_peer = receive.begin() + static_cast<long>(displs[1 - me]);
    if (!result.failed() && std::count(from_peer, from_peer + static_cast<long>(kBytes),
                                       std::byte(0x10 + (1 - me))) != static_cast<long>(kBytes)) {
      return CallResult{kWrongData, "alltoallv delivered the wrong bytes"};
    }
    return result;
  };
  run_link_cut({[&](const testing::RankContext& rank) {
                  client = store::Client::connect(rank.store_url);
                  group =
                      core::Group::create(client, store::KeyPrefix(rank.job_id + "/g/"), rank.rank,
                                          2, Deadline::after(std::chrono::seconds(20)));
                  if (rank.rank == 1) {
                    // Rank 1 answers the collective until told to stop.
                    responder = std::thread([&] {
                      while (!stop) {
                        // A failed group fails every later call at once: do not spin.
                        if (alltoallv().failed()) {
                          std::this_thread::sleep_for(std::chrono::milliseconds(20));
                        }
                      }
                    });
                  }
                },
                alltoallv, alltoallv,
                [&] {
                  stop = true;
                  if (responder.joinable()) responder.join();
                  group.reset();
                  client.reset();
                }});
}

}  // namespace
}  // namespace memloom::faults
