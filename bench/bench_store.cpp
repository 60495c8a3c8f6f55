// memloom-bench store: set, get and add with 64 clients (one thread each, own connection) against
// memloom's TCP store and against a local single-member etcd (Debian's etcd-server, started on
// free loopback ports in /dev/shm like the tests' one), in the same run: ops/s and mean latency
// of each, and etcd's figures as a fraction of the TCP store's. The adds all go to one counter,
// as ranks taking ids or meeting at a barrier do: on etcd each is a transaction that loses to
// every other writer of the counter in between, so the slowest add is reported too.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_registry.h"
#include "bench/bench_timing.h"
#include "memloom/error.h"
#include "src/store/client.h"
#include "src/store/server.h"
#include "tests/etcd/etcd_cluster.h"

namespace memloom::bench {
namespace {

constexpr int kClients = 64;

struct Figures {
  double set_ops = 0, get_ops = 0, add_ops = 0;              // per second, all clients together
  double set_latency = 0, get_latency = 0, add_latency = 0;  // mean seconds per call
  double slowest_add = 0;                                    // seconds
  int failed_adds = 0;  // gave up at the call deadline ("too much contention" on etcd)
};

enum class Phase { kSet, kGet, kAdd };

// Each client sets then gets `ops` keys of its own, then adds 1 to the shared counter `ops` times,
// all clients at once.
Figures measure(const std::string& url, const std::string& job, int ops) {
  std::vector<std::unique_ptr<store::Client>> clients;
  store::ClientOptions options;
  options.job_namespace = job;
  for (int c = 0; c < kClients; ++c) clients.push_back(store::Client::connect(url, options));
  Figures figures;
  auto phase = [&](Phase kind) {
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    double start = 0;
    std::vector<double> slowest(kClients, 0.0);
    std::atomic<int> failed{0};
    for (int c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] {
        ++ready;
        while (!go) std::this_thread::yield();
        std::string value(64, 'v');
        store::Client& client = *clients[static_cast<size_t>(c)];
        for (int i = 0; i < ops; ++i) {
          std::string key = "bench/" + std::to_string(c) + "/" + std::to_string(i);
          if (kind == Phase::kSet) {
            client.set(key, value);
          } else if (kind == Phase::kGet) {
            if (!client.get(key, std::chrono::milliseconds(0))) {
              std::fprintf(stderr, "store bench: %s lost\n", key.c_str());
            }
          } else {
            const double called = seconds_now();
            try {
              client.add("bench/counter", 1);
            } catch (const Error&) {
              ++failed;
            }
            slowest[static_cast<size_t>(c)] =
                std::max(slowest[static_cast<size_t>(c)], seconds_now() - called);
          }
        }
      });
    }
    while (ready < kClients) std::this_thread::yield();
    start = seconds_now();
    go = true;
    for (auto& thread : threads) thread.join();
    double seconds = seconds_now() - start;
    double total = static_cast<double>(kClients) * ops;
    const double ops_per_second = total / seconds, latency = seconds * kClients / total;
    if (kind == Phase::kSet) {
      figures.set_ops = ops_per_second;
      figures.set_latency = latency;
    } else if (kind == Phase::kGet) {
      figures.get_ops = ops_per_second;
      figures.get_latency = latency;
    } else {
      figures.add_ops = ops_per_second;
      figures.add_latency = latency;
      figures.slowest_add = *std::max_element(slowest.begin(), slowest.end());
      figures.failed_adds = failed.load();
    }
  };
  phase(Phase::kSet);
  phase(Phase::kGet);
  phase(Phase::kAdd);
  const auto counted = clients[0]->get("bench/counter", std::chrono::milliseconds(0));
  if (counted != std::to_string(kClients * ops - figures.failed_adds)) {
    std::fprintf(stderr, "store bench: the counter reads %s after %d adds\n",
                 counted.value_or("nothing").c_str(), kClients * ops);
  }
  return figures;
}

void print(const char* name, const Figures& f) {
  std::printf("  %-22s set %8.0f ops/s (%6.2f ms each)   get %8.0f ops/s (%6.2f ms each)\n", name,
              f.set_ops, f.set_latency * 1e3, f.get_ops, f.get_latency * 1e3);
  std::printf("  %-22s add %8.0f ops/s (%6.2f ms each, slowest %.0f ms, %d failed)\n", "",
              f.add_ops, f.add_latency * 1e3, f.slowest_add * 1e3, f.failed_adds);
}

int run_store_bench(const std::vector<std::string>& args) {
  int ops = args.empty() ? 50 : std::stoi(args[0]);
  auto server = store::Server::start(store::ServerOptions{});
  store::testing::EtcdCluster etcd(1);
  std::printf(
      "store: %d clients, %d sets then %d gets each (64-byte values), then %d adds each to one "
      "counter\n",
      kClients, ops, ops, ops);
  Figures tcp = measure(server->url(), "bench-tcp", ops);
  Figures on_etcd = measure(etcd.url(), "bench-etcd", ops);
  print("memloom TCP store", tcp);
  print("etcd 1 member (local)", on_etcd);
  std::printf("  etcd / TCP store: set %.2fx the ops/s, get %.2fx the ops/s, add %.2fx the ops/s\n",
              on_etcd.set_ops / tcp.set_ops, on_etcd.get_ops / tcp.get_ops,
              on_etcd.add_ops / tcp.add_ops);
  return 0;
}

}  // namespace

MEMLOOM_REGISTER_BENCH("store",
                       "set/get/add ops/s and latency, 64 clients: TCP store vs a local etcd [OPS]",
                       run_store_bench);

}  // namespace memloom::bench
