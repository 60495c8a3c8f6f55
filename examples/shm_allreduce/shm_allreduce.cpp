// An allreduce (sum of float vectors) written with MemFabric symmetric memory and its barrier.
//
// Every rank contributes one symmetric slot: [ input vector | reduced vector ]. Because every rank
// maps every same-node slot at gva + r * symmetricSize, a rank reads its peers' inputs directly:
//   1. reduce-scatter: rank r sums chunk r of every rank's input into chunk r of its own output;
//   2. barrier;
//   3. allgather: every rank reads chunk c from rank c's output.
// Symmetric memory is where the backend puts it: host memory on the emulated backend, GPU memory
// on the CUDA backend. The arithmetic below runs on the host, so it moves data between the slots
// and host vectors with memloom_memcpy_async, the device's copy engine on either backend (on a
// GPU a kernel would work on the slots in place). Symmetric memory maps the ranks of one node, so
// all ranks must share a node.
//
//   memloom-run -n 4 -- build/bin/shm_allreduce [elements]     (or mpirun -np 4, torchrun, srun)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memloom/launch.h"
#include "memloom/stream.h"
#include "smem/host/smem_shm.h"

#include "../common/launched_rank.h"

namespace {

// Copies between symmetric memory and host memory, whichever the slots are, and waits for it
// (memloom logs the reason of a failure).
bool copy(void* destination, const void* source, size_t bytes, const char* what) {
  memloom_status_t status = memloom_memcpy_async(destination, source, bytes, nullptr);
  if (status == MEMLOOM_STATUS_SUCCESS) status = memloom_stream_synchronize(nullptr);
  if (status == MEMLOOM_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "shm_allreduce: copy (%s) failed with memloom status %d\n", what,
               static_cast<int>(status));
  return false;
}

int fail(const char* what) {
  std::fprintf(stderr, "shm_allreduce: %s failed: %s\n", what, smem_get_last_err_msg());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const memloom_launch_info_t launch =
      memloom_examples::launch_info_or_exit(argv[0], "-n 4", "[elements]");
  const int rank = launch.rank, world = launch.world_size;
  const char* store = launch.store_url;
  const size_t elements = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1u << 16;
  const size_t chunk = (elements + world - 1) / world;
  const uint64_t symmetric_size =
      ((2 * chunk * world * sizeof(float)) + (2u << 20) - 1) / (2u << 20) * (2u << 20);

  smem_shm_config_t config;
  smem_shm_config_init(&config);
  // memloom-run runs a store; under torchrun, mpirun or srun rank 0 serves one.
  config.startConfigStoreServer = launch.rank0_serves_store != 0;
  config.controlOperationTimeout = 30;
  if (smem_init(0) != 0) return fail("smem_init");
  if (smem_shm_init(store, world, rank, static_cast<uint16_t>(launch.device), &config) != 0)
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
  std::vector<float> input(padded);
  for (size_t i = 0; i < padded; ++i)
    input[i] = i < elements ? static_cast<float>((rank + 1) * (i % 97)) : 0.0f;
  if (!copy(slot(rank), input.data(), padded * sizeof(float), "inputs")) return 1;
  if (smem_shm_control_barrier(shm) != 0) return fail("barrier (inputs written)");

  // Reduce-scatter: chunk `rank` of every rank's input, summed into chunk `rank` of my output.
  std::vector<float> sum(chunk, 0.0f), part(chunk);
  for (int peer = 0; peer < world; ++peer) {
    if (!copy(part.data(), slot(peer) + rank * chunk, chunk * sizeof(float), "a peer's chunk"))
      return 1;
    for (size_t i = 0; i < chunk; ++i) sum[i] += part[i];
  }
  if (!copy(slot(rank) + padded + rank * chunk, sum.data(), chunk * sizeof(float),
            "my reduced chunk"))
    return 1;
  if (smem_shm_control_barrier(shm) != 0) return fail("barrier (chunks reduced)");

  // Allgather: chunk c from rank c's output.
  std::vector<float> result(padded);
  for (int owner = 0; owner < world; ++owner) {
    if (!copy(result.data() + owner * chunk, slot(owner) + padded + owner * chunk,
              chunk * sizeof(float), "a reduced chunk"))
      return 1;
  }
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
