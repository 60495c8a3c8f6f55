// One config store serves 1,024 concurrent clients: 4 processes with 256 clients each, every client
// driven by its own thread doing set / get / add for a few seconds. Every reply is checked, and the
// test prints the operations per second the store sustained.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/store/client.h"
#include "tests/support/multi_process.h"

namespace memloom::load {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kProcesses = 4;
constexpr int kClientsPerProcess = 256;
constexpr auto kRunFor = std::chrono::seconds(4);

// Returns once `size` processes have added to `key`.
void await_count(store::Client& client, const std::string& key, int64_t size) {
  const auto end = Clock::now() + std::chrono::seconds(120);
  while (client.add(key, 0) < size) {
    if (Clock::now() > end) throw std::runtime_error("timed out waiting on '" + key + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(StoreLoad, OneStoreServesAThousandTwentyFourConcurrentClients) {
  testing::MultiProcessOptions options;
  options.ranks = kProcesses;
  options.timeout = std::chrono::seconds(240);
  auto results = testing::run_ranks(options, [](const testing::RankContext& ctx) {
    const std::string prefix = ctx.job_id + "/load/";
    store::ClientOptions client_options;
    client_options.connect_timeout = std::chrono::seconds(60);
    // 2,048 threads share two cores: give heartbeats room before a client is declared down.
    client_options.heartbeat_timeout = std::chrono::seconds(30);
    std::vector<std::unique_ptr<store::Client>> clients;
    for (int i = 0; i < kClientsPerProcess; ++i) {
      clients.push_back(store::Client::connect(ctx.store_url, client_options));
    }
    store::Client& control = *clients.front();
    control.add(prefix + "connected", 1);
    await_count(control, prefix + "connected", kProcesses);

    std::atomic<bool> go{false};
    std::atomic<int64_t> operations{0}, wrong{0}, failed{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kClientsPerProcess; ++i) {
      threads.emplace_back([&, i] {
        store::Client& client = *clients[i];
        const std::string name = prefix + std::to_string(ctx.rank) + "/" + std::to_string(i);
        while (!go) std::this_thread::yield();
        const auto end = Clock::now() + kRunFor;
        int64_t done = 0, adds = 0;
        try {
          for (int64_t n = 0; Clock::now() < end; ++n) {
            const std::string value = std::to_string(n);
            client.set(name + "/value", value);
            if (client.get(name + "/value", std::chrono::milliseconds(0)) != value) ++wrong;
            if (client.add(name + "/count", 1) != ++adds) ++wrong;
            done += 3;
          }
        } catch (const std::exception& error) {
          ++failed;
          std::fprintf(stderr, "client %d/%d failed: %s\n", ctx.rank, i, error.what());
        }
        operations += done;
      });
    }
    const auto start = Clock::now();
    go = true;
    for (auto& thread : threads) thread.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(wrong.load(), 0);

    control.add(prefix + "operations", operations.load());
    control.add(prefix + "finished", 1);
    if (ctx.rank == 0) {
      await_count(control, prefix + "finished", kProcesses);
      const int64_t total = control.add(prefix + "operations", 0);
      std::printf(
          "[load] store: %d concurrent clients (%d processes x %d), %lld set/get/add "
          "operations in %.1f s = %.0f ops/s\n",
          kProcesses * kClientsPerProcess, kProcesses, kClientsPerProcess,
          static_cast<long long>(total), seconds, static_cast<double>(total) / seconds);
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::load
