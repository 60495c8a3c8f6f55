// A prefill instance writes KV-cache blocks into a decode instance with the MemFabric TRANS API.
//
// The decode side owns a pool of KV blocks (smem_trans_malloc: same-node peers map it directly)
// and assigns each request's blocks to slots of it; the prefill side, told the pool's address,
// computes the blocks and writes all layers' blocks of a request in one batch. The instances find
// each other through the config store, which the decode instance starts.
//
//   kv_transfer [--two-nodes]               both roles on this host (forks the prefill process);
//                                           --two-nodes puts them on two emulated nodes; the
//                                           store is MEMLOOM_STORE_URL (tcp:// or etcd://) if
//                                           set, else a TCP store on a free local port
//   kv_transfer decode  STORE ID            starts STORE, prints the pool address, checks blocks
//   kv_transfer prefill STORE ID PEER POOL  writes the blocks into PEER's pool at address POOL
// e.g. decode tcp://10.0.0.1:7000 10.0.0.1:7001, then
//      prefill tcp://10.0.0.1:7000 10.0.0.2:7002 10.0.0.1:7001 <printed pool address>
//
// Only the public C API is used, as an application would. The pool address travels the way a
// serving system sends it with each request: here on stdout, or through a pipe in the demo.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "smem/host/smem_trans.h"

namespace {

constexpr uint32_t kLayers = 8;
constexpr uint32_t kBlocksPerRequest = 16;
constexpr uint32_t kRequests = 8;
constexpr size_t kBlockBytes = 64 * 1024;  // one layer's K and V for a block of tokens
constexpr uint32_t kPoolBlocks = kLayers * kBlocksPerRequest * kRequests;

// The content prefill computes for (request, layer, block): here a cheap deterministic pattern
// that decode can check.
void compute_block(uint32_t request, uint32_t layer, uint32_t block, uint8_t* out) {
  uint64_t state =
      (static_cast<uint64_t>(request) << 40) ^ (static_cast<uint64_t>(layer) << 20) ^ block;
  for (size_t i = 0; i < kBlockBytes; i += 8) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::memcpy(out + i, &state, 8);
  }
}

// Which pool slot decode assigned to (request, layer, block): scattered, as a real allocator's are.
uint32_t pool_slot(uint32_t request, uint32_t layer, uint32_t block) {
  uint32_t linear = (request * kLayers + layer) * kBlocksPerRequest + block;
  return (linear * 37u) % kPoolBlocks;  // 37 is coprime with the pool size: a permutation
}

int fail(const char* what, int code) {
  std::fprintf(stderr, "%s failed (%d): %s\n", what, code, smem_get_last_err_msg());
  return 1;
}

// A decode instance: starts the config store, offers its pool (its address written to
// `announce`), and checks what arrived.
int run_decode(const std::string& store, const std::string& id, FILE* announce) {
  smem_trans_config_t config;
  smem_trans_config_init(&config);
  config.role = SMEM_TRANS_RECEIVER;
  config.startConfigServer = true;
  config.initTimeout = 30;
  if (int code = smem_trans_init(&config)) return fail("smem_trans_init", code);
  smem_trans_t trans = smem_trans_create(store.c_str(), id.c_str(), &config);
  if (trans == nullptr) return fail("smem_trans_create (decode)", -1);
  auto* pool = static_cast<uint8_t*>(
      smem_trans_malloc(trans, static_cast<size_t>(kPoolBlocks) * kBlockBytes));
  if (pool == nullptr) return fail("smem_trans_malloc", -1);
  std::fprintf(announce, "%" PRIuPTR "\n", reinterpret_cast<uintptr_t>(pool));
  std::fflush(announce);
  std::fprintf(stderr, "decode %s: pool of %u blocks at %p\n", id.c_str(), kPoolBlocks,
               static_cast<void*>(pool));
  // Wait for the last block of the last request, then check every block.
  std::vector<uint8_t> expected(kBlockBytes);
  compute_block(kRequests - 1, kLayers - 1, kBlocksPerRequest - 1, expected.data());
  uint8_t* last =
      pool + static_cast<size_t>(pool_slot(kRequests - 1, kLayers - 1, kBlocksPerRequest - 1)) *
                 kBlockBytes;
  for (int waited = 0; std::memcmp(last, expected.data(), kBlockBytes) != 0; ++waited) {
    if (waited > 3000) return fail("waiting for the KV blocks", -1);
    usleep(10000);
  }
  uint32_t bad = 0;
  for (uint32_t r = 0; r < kRequests; ++r)
    for (uint32_t l = 0; l < kLayers; ++l)
      for (uint32_t b = 0; b < kBlocksPerRequest; ++b) {
        compute_block(r, l, b, expected.data());
        bad += std::memcmp(pool + static_cast<size_t>(pool_slot(r, l, b)) * kBlockBytes,
                           expected.data(), kBlockBytes) != 0;
      }
  std::printf("decode %s: %u of %u blocks correct\n", id.c_str(), kPoolBlocks - bad, kPoolBlocks);
  smem_trans_free(trans, pool);
  smem_trans_destroy(trans, 0);
  smem_trans_uninit(0);
  return bad == 0 ? 0 : 1;
}

// A prefill instance: computes each request's KV blocks and writes them, one batch per request.
int run_prefill(const std::string& store, const std::string& id, const std::string& decode,
                uintptr_t pool_address) {
  smem_trans_config_t config;
  smem_trans_config_init(&config);
  config.role = SMEM_TRANS_SENDER;
  config.initTimeout = 30;
  if (int code = smem_trans_init(&config)) return fail("smem_trans_init", code);
  smem_trans_t trans = nullptr;
  for (int attempt = 0; trans == nullptr && attempt < 300;
       ++attempt) {  // the store may not be up yet
    trans = smem_trans_create(store.c_str(), id.c_str(), &config);
    if (trans == nullptr) usleep(10000);
  }
  if (trans == nullptr) return fail("smem_trans_create (prefill)", -1);
  auto* pool = reinterpret_cast<uint8_t*>(pool_address);

  const uint32_t batch = kLayers * kBlocksPerRequest;
  std::vector<uint8_t> blocks(static_cast<size_t>(batch) * kBlockBytes);
  std::vector<const void*> sources(batch);
  std::vector<void*> targets(batch);
  std::vector<size_t> sizes(batch, kBlockBytes);
  for (uint32_t r = 0; r < kRequests; ++r) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      for (uint32_t b = 0; b < kBlocksPerRequest; ++b) {
        uint32_t i = l * kBlocksPerRequest + b;
        compute_block(r, l, b, blocks.data() + static_cast<size_t>(i) * kBlockBytes);
        sources[i] = blocks.data() + static_cast<size_t>(i) * kBlockBytes;
        targets[i] = pool + static_cast<size_t>(pool_slot(r, l, b)) * kBlockBytes;
      }
    }
    if (int code = smem_trans_batch_write(trans, sources.data(), decode.c_str(), targets.data(),
                                          sizes.data(), batch, 0)) {
      return fail("smem_trans_batch_write", code);
    }
  }
  std::printf("prefill %s: wrote %u requests x %u blocks to %s\n", id.c_str(), kRequests, batch,
              decode.c_str());
  smem_trans_destroy(trans, 0);
  smem_trans_uninit(0);
  return 0;
}

// `count` distinct ports nobody listens on, for the single-host demo: every socket stays bound
// until all are picked, or the kernel could hand out one port twice (the two instances would then
// be named alike and the second could not listen).
std::vector<std::string> free_local_ids(int count) {
  std::vector<int> fds;
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), length);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    fds.push_back(fd);
    ids.push_back("127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
  }
  for (int fd : fds) ::close(fd);
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "decode") return run_decode(argv[2], argv[3], stdout);
  if (argc == 6 && std::string(argv[1]) == "prefill") {
    return run_prefill(argv[2], argv[3], argv[4], std::strtoull(argv[5], nullptr, 0));
  }
  const bool two_nodes = argc == 2 && std::string(argv[1]) == "--two-nodes";
  if (argc != 1 && !two_nodes) {
    std::fprintf(stderr,
                 "usage: %s [--two-nodes] | decode STORE_URL ID | prefill STORE_URL ID DECODE_ID "
                 "POOL_ADDRESS\n",
                 argv[0]);
    return 2;
  }
  const std::vector<std::string> ids = free_local_ids(3);
  // A store named by the environment (an etcd cluster, say) is used as it is; decode's "start"
  // of an etcd store only checks that it answers.
  const char* named_store = std::getenv("MEMLOOM_STORE_URL");
  const std::string store = named_store != nullptr && named_store[0] != '\0'
                                ? std::string(named_store)
                                : "tcp://" + ids[0];
  const std::string decode_id = ids[1];
  const std::string prefill_id = ids[2];
  int channel[2];
  if (::pipe(channel) != 0) return fail("pipe", -1);
  std::fflush(stdout);
  pid_t prefill = ::fork();
  if (prefill == 0) {
    // On two emulated nodes the blocks cross "the network" (TCP) instead of being copied directly.
    if (two_nodes) ::setenv("MEMLOOM_NODE", "kv-transfer-prefill-node", 1);
    ::close(channel[1]);
    FILE* in = ::fdopen(channel[0], "r");
    uintptr_t pool = 0;
    if (in == nullptr || std::fscanf(in, "%" SCNuPTR, &pool) != 1)
      ::_exit(fail("receiving the pool address", -1));
    ::_exit(run_prefill(store, prefill_id, decode_id, pool));
  }
  if (two_nodes) ::setenv("MEMLOOM_NODE", "kv-transfer-decode-node", 1);
  ::close(channel[0]);
  FILE* out = ::fdopen(channel[1], "w");
  int decode_result = run_decode(store, decode_id, out);
  std::fclose(out);
  int status = 0;
  ::waitpid(prefill, &status, 0);
  bool prefill_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("kv_transfer: %s\n", decode_result == 0 && prefill_ok ? "OK" : "FAILED");
  return decode_result == 0 && prefill_ok ? 0 : 1;
}
