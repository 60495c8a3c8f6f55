// memloom-bench store: set and get with 64 clients (one thread each, own connection) against
// memloom's TCP store and against a local single-member etcd (Debian's etcd-server, started on
// free loopback ports in /dev/shm like the tests' one), in the same run: ops/s and mean latency
// of each, and etcd's figures as a fraction of the TCP store's.
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_registry.h"
#include "bench/bench_timing.h"
#include "src/store/client.h"
#include "src/store/server.h"
#include "tests/etcd/etcd_cluster.h"

namespace memloom::bench {
namespace {

constexpr int kClients = 64;

struct Figures {
  double set_ops = 0, get_ops = 0;          // per second, all clients together
  double set_latency = 0, get_latency = 0;  // mean seconds per call
};

// Each client sets then gets `ops` keys of its own, all clients at once.
Figures measure(const std::string& url, const std::string& job, int ops) {
  std::vector<std::unique_ptr<store::Client>> clients;
  store::ClientOptions options;
  options.job_namespace = job;
  for (int c = 0; c < kClients; ++c) clients.push_back(store::Client::connect(url, options));
  Figures figures;
  auto phase = [&](bool set) {
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    double start = 0;
    for (int c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] {
        ++ready;
        while (!go) std::this_thread::yield();
        std::string value(64, 'v');
        for (int i = 0; i < ops; ++i) {
          std::string key = "bench/" + std::to_string(c) + "/" + std::to_string(i);
          if (set) {
            clients[static_cast<size_t>(c)]->set(key, value);
          } else if (!clients[static_cast<size_t>(c)]->get(key, std::chrono::milliseconds(0))) {
            std::fprintf(stderr, "store bench: %s lost\n", key.c_str());
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
    (set ? figures.set_ops : figures.get_ops) = total / seconds;
    (set ? figures.set_latency : figures.get_latency) = seconds * kClients / total;
  };
  phase(true);
  phase(false);
  return figures;
}

void print(const char* name, const Figures& f) {
  std::printf("  %-22s set %8.0f ops/s (%6.2f ms each)   get %8.0f ops/s (%6.2f ms each)\n", name,
              f.set_ops, f.set_latency * 1e3, f.get_ops, f.get_latency * 1e3);
}

int run_store_bench(const std::vector<std::string>& args) {
  int ops = args.empty() ? 50 : std::stoi(args[0]);
  auto server = store::Server::start(store::ServerOptions{});
  store::testing::EtcdCluster etcd(1);
  std::printf("store: %d clients, %d sets then %d gets each, 64-byte values\n", kClients, ops, ops);
  Figures tcp = measure(server->url(), "bench-tcp", ops);
  Figures on_etcd = measure(etcd.url(), "bench-etcd", ops);
  print("memloom TCP store", tcp);
  print("etcd 1 member (local)", on_etcd);
  std::printf("  etcd / TCP store: set %.2fx the ops/s, get %.2fx the ops/s\n",
              on_etcd.set_ops / tcp.set_ops, on_etcd.get_ops / tcp.get_ops);
  return 0;
}

}  // namespace

MEMLOOM_REGISTER_BENCH("store",
                       "set/get ops/s and latency, 64 clients: TCP store vs a local etcd [OPS]",
                       run_store_bench);

}  // namespace memloom::bench
