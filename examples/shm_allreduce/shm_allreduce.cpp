// An allreduce (sum of float vectors) written with MemFabric symmetric memory and its barrier.
//
// Every rank contributes one symmetric slot: [ input vector | reduced vector ]. Because every rank
// maps every same-node slot at gva + r * symmetricSize, a rank reads its peers' inputs directly:
//   1. reduce-scatter: rank r sums chunk r of every rank's input into chunk r of its own output;
//   2. barrier;
//   3. allgather: every rank reads chunk c from rank c's output.
// The loads and stores below run on the host, which reaches the slots on the emulated backend (on
// a GPU, the same loops would be a kernel). Symmetric memory maps the ranks of one node, so all
// ranks must share a node.
//
//   memloom-run -n 4 -- build/bin/shm_allreduce [elements]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "smem/host/smem_shm.h"

namespace {

int env_int(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? -1 : std::atoi(value);
}

int fail(const char* what) {
  std::fprintf(stderr, "shm_allreduce: %s failed: %s\n", what, smem_get_last_err_msg());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = env_int("MEMLOOM_RANK");
  const int world = env_int("MEMLOOM_WORLD_SIZE");
  const int device = env_int("MEMLOOM_DEVICE") >= 0 ? env_int("MEMLOOM_DEVICE") : 0;
  const char* store = std::getenv("MEMLOOM_STORE_URL");
  if (rank < 0 || world < 1 || store == nullptr) {
    std::fprintf(stderr, "run me with memloom-run: memloom-run -n 4 -- %s [elements]\n", argv[0]);
    return 2;
  }
  const size_t elements = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1u << 16;
  const size_t chunk = (elements + world - 1) / world;
  const uint64_t symmetric_size =
      ((2 * chunk * world * sizeof(float)) + (2u << 20) - 1) / (2u << 20) * (2u << 20);

  smem_shm_config_t config;
  smem_shm_config_init(&config);
  config.startConfigStoreServer = false;  // memloom-run runs the store
  config.controlOperationTimeout = 30;
  if (smem_init(0) != 0) return fail("smem_init");
  if (smem_shm_init(store, world, rank, static_cast<uint16_t>(device), &config) != 0)
    return fail("smem_shm_init");
  void* gva = nullptr;
  smem_shm_t shm = smem_shm_create(0, world, rank, symmetric_size, SMEMS_DATA_OP_MTE, 0, &gva);
  if (shm == nullptr) return fail("smem_shm_create");
  for (int peer = 0; peer < world; ++peer) {
    uint32_t reach = 0;
    if (smem_shm_topology_can_reach(shm, peer, &reach) != 0)
      return fail("smem_shm_topology_can_reach");
    if ((reach & SMEMS_DATA_OP_MTE) == 0) {
      std::fprintf(stderr, "shm_allreduce: rank %d is on another node; run all ranks on one node\n",
                   peer);
      return 1;
    }
  }

  auto slot = [&](int r) {
    return reinterpret_cast<float*>(static_cast<char*>(gva) + r * symmetric_size);
  };
  const size_t padded = chunk * world;
  float* input = slot(rank);
  float* output = slot(rank) + padded;
  for (size_t i = 0; i < padded; ++i)
    input[i] = i < elements ? static_cast<float>((rank + 1) * (i % 97)) : 0.0f;
  if (smem_shm_control_barrier(shm) != 0) return fail("barrier (inputs written)");

  for (size_t i = rank * chunk; i < (rank + 1) * chunk; ++i) {  // reduce-scatter
    float sum = 0.0f;
    for (int peer = 0; peer < world; ++peer) sum += slot(peer)[i];
    output[i] = sum;
  }
  if (smem_shm_control_barrier(shm) != 0) return fail("barrier (chunks reduced)");

  std::vector<float> result(elements);
  for (size_t i = 0; i < elements; ++i)
    result[i] = (slot(static_cast<int>(i / chunk)) + padded)[i];  // allgather
  if (smem_shm_control_barrier(shm) != 0) return fail("barrier (results read)");

  size_t wrong = 0;
  const float ranks_sum = static_cast<float>(world * (world + 1) / 2);
  for (size_t i = 0; i < elements; ++i)
    wrong += result[i] != ranks_sum * static_cast<float>(i % 97);
  std::printf("rank %d: allreduce of %zu floats over %d ranks: %s\n", rank, elements, world,
              wrong == 0 ? "correct" : "WRONG");
  smem_shm_destroy(shm, 0);
  smem_shm_uninit(0);
  smem_uninit();
  return wrong == 0 ? 0 : 1;
}
