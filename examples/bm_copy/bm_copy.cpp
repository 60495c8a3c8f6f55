// MemFabric BM: every rank contributes device (HBM) and host (DRAM) memory to one global address
// space, then passes a message around a ring with copies — synchronous, batched and asynchronous.
// Ranks on other nodes are reached through the transport, without any change to this code.
//
//   memloom-run -n 4 --nodes 2 -- build/bin/bm_copy     (or mpirun -np 4, torchrun, srun)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "memloom/launch.h"
#include "smem/host/smem_bm.h"

#include "../common/launched_rank.h"

namespace {

constexpr uint64_t kSlot = 2u << 20;
constexpr uint64_t kMagic = 0x6d656d6c6f6f6d21ull;
constexpr size_t kBlock = 4096, kBlocks = 4;

struct Message {
  uint64_t magic;
  uint32_t from;
  char text[52];
};

int fail(const char* what) {
  std::fprintf(stderr, "bm_copy: %s failed: %s\n", what, smem_get_last_err_msg());
  return 1;
}

// Reads `bytes` at `gva` (of this rank's own slot) until `arrived` accepts them, for up to 30 s.
template <typename T, typename Pred>
bool wait_for(smem_bm_t bm, void* gva, T* value, Pred arrived) {
  smem_copy_params params{gva, value, sizeof(T)};
  for (int i = 0; i < 30000; ++i) {
    if (smem_bm_copy(bm, &params, SMEMB_COPY_AUTO, 0) != 0) return false;
    if (arrived(*value)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace

int main(int, char** argv) {
  const memloom_launch_info_t launch =
      memloom_examples::launch_info_or_exit(argv[0], "-n 4 --nodes 2", "");
  const int rank = launch.rank, world = launch.world_size;
  const char* store = launch.store_url;
  smem_bm_config_t config;
  smem_bm_config_init(&config);
  // memloom-run runs a store; under torchrun, mpirun or srun rank 0 serves one.
  config.startConfigStoreServer = launch.rank0_serves_store != 0;
  config.rankId = static_cast<uint16_t>(rank);
  config.autoRanking = false;
  config.controlOperationTimeout = 30;
  if (smem_init(0) != 0) return fail("smem_init");
  if (smem_bm_init(store, world, static_cast<uint16_t>(launch.device), &config) != 0)
    return fail("smem_bm_init");
  smem_bm_t bm = smem_bm_create(0, world, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
  if (bm == nullptr) return fail("smem_bm_create");
  void* mine = nullptr;
  if (smem_bm_join(bm, 0, &mine) != 0) return fail("smem_bm_join");

  const int next = (rank + 1) % world, previous = (rank + world - 1) % world;
  auto* next_device = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, next));
  auto* next_host = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, next));
  auto* my_host = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, rank));
  std::printf("rank %d: my device slot %p (rank by gva: %u), next rank's %p\n", rank, mine,
              smem_bm_get_rank_id_by_gva(bm, mine), static_cast<void*>(next_device));

  // 1. smem_bm_join returned once every rank had joined, so every peer's slot takes copies now.
  Message message{};
  smem_copy_params clear{&message, next_device, sizeof(message)};
  if (smem_bm_copy(bm, &clear, SMEMB_COPY_H2G, 0) != 0) return fail("H2G");

  // 2. Four blocks into its host slot in one asynchronous batch (contiguous: merged into one copy).
  std::vector<char> blocks(kBlocks * kBlock);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<char>(rank * 7 + i % 13);
  void* sources[kBlocks];
  void* destinations[kBlocks];
  uint64_t sizes[kBlocks];
  for (size_t b = 0; b < kBlocks; ++b) {
    sources[b] = blocks.data() + b * kBlock;
    destinations[b] = next_host + b * kBlock;
    sizes[b] = kBlock;
  }
  smem_batch_copy_params batch{sources, destinations, sizes, kBlocks};
  if (smem_bm_copy_batch(bm, &batch, SMEMB_COPY_H2GH, ASYNC_COPY_FLAG) != 0)
    return fail("batch copy");
  if (smem_bm_wait(bm) != 0) return fail("smem_bm_wait");

  // 3. Then the message that says the blocks are there (a synchronous host-to-global copy).
  message = Message{kMagic, static_cast<uint32_t>(rank), {}};
  std::snprintf(message.text, sizeof(message.text), "hello from rank %d", rank);
  smem_copy_params send{&message, next_device, sizeof(message)};
  if (smem_bm_copy(bm, &send, SMEMB_COPY_H2G, 0) != 0) return fail("H2G");

  // 4. Wait for the previous rank's message, check its blocks, and acknowledge.
  Message received{};
  if (!wait_for(bm, mine, &received, [&](const Message& m) { return m.magic == kMagic; }))
    return fail("waiting for a message");
  std::vector<char> seen(kBlocks * kBlock);
  smem_copy_params read_blocks{my_host, seen.data(), seen.size()};
  if (smem_bm_copy(bm, &read_blocks, SMEMB_COPY_GH2H, 0) != 0) return fail("GH2H");
  bool blocks_ok = received.from == static_cast<uint32_t>(previous);
  for (size_t i = 0; i < seen.size(); ++i)
    blocks_ok = blocks_ok && seen[i] == static_cast<char>(previous * 7 + i % 13);
  std::printf("rank %d: got \"%s\" and %zu bytes from rank %u: %s\n", rank, received.text,
              seen.size(), received.from, blocks_ok ? "correct" : "WRONG");
  auto* previous_device =
      static_cast<char*>(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, previous));
  const uint64_t ack = kMagic + 1;
  smem_copy_params send_ack{&ack, previous_device + sizeof(Message), sizeof(ack)};
  if (smem_bm_copy(bm, &send_ack, SMEMB_COPY_H2G, 0) != 0) return fail("ack");

  // 5. Stay joined until the next rank has read what this rank wrote.
  uint64_t my_ack = 0;
  if (!wait_for(bm, static_cast<char*>(mine) + sizeof(Message), &my_ack,
                [](uint64_t v) { return v == kMagic + 1; })) {
    return fail("waiting for the acknowledgement");
  }
  smem_bm_leave(bm, 0);
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
  smem_uninit();
  return blocks_ok ? 0 : 1;
}
