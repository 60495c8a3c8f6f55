// MemFabric copies between the two GPUs at kCopyBytes, rank 0 on GPU 0 and rank 1 on GPU 1:
//   - SHM: rank 0 copies (cudaMemcpyAsync, timed with events) to and from rank 1's symmetric slot
//     through the GVA, which maps GPU 1's memory into rank 0's address space;
//   - BM: smem_bm_copy L2G / G2L between rank 0's cudaMalloc'ed memory and rank 1's device slot,
//     issued with ASYNC_COPY_FLAG in batches completed by smem_bm_wait (host clock per batch);
//   - TRANS: smem_trans_write / smem_trans_read from rank 0's instance into cudaMalloc'ed memory
//     that rank 1's instance registered (blocking calls, host clock).
// Every copy that claims to have landed is checked on the other rank.
#include <cuda_runtime_api.h>

#include <exception>

#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"
#include "bench/smem_sessions.h"

namespace memloom::bench::gpu {
namespace {

constexpr uint32_t kControlTimeoutSeconds = 60;
constexpr size_t kChecked = 4096;
constexpr int kBmBatch = 4;
constexpr int kPoolMailbox = 0, kTargetPortMailbox = 1;

// Runs measure(); whatever happens, meet() runs next (the peer waits there), then a failure of
// measure() is rethrown. Keeps a failing rank from leaving its peer waiting out a timeout.
template <typename Measure, typename Meet>
void measure_then_meet(Measure&& measure, Meet&& meet) {
  std::exception_ptr failure;
  try {
    measure();
  } catch (...) {
    failure = std::current_exception();
  }
  meet();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

Figures shm_rank(const RankInfo& info) {
  use_device(info.local_rank);
  ShmSession session(info, kCopyBytes, kControlTimeoutSeconds);
  session.barrier();
  Figures figures;
  measure_then_meet(
      [&] {
        if (info.rank != 0) return;
        DeviceBuffer local(kCopyBytes, "rank 0's SHM buffer");
        fill_device(local.data(), 0x5a, kCopyBytes);
        Stream stream;
        char* peer = session.slot(1);
        figures["put"] = best_event_seconds(
            stream.get(),
            [&] {
              check_cuda(
                  cudaMemcpyAsync(peer, local.data(), kCopyBytes, cudaMemcpyDefault, stream.get()),
                  "cudaMemcpyAsync to rank 1's SHM slot");
            },
            "SHM put");
        figures["get"] = best_event_seconds(
            stream.get(),
            [&] {
              check_cuda(
                  cudaMemcpyAsync(local.data(), peer, kCopyBytes, cudaMemcpyDefault, stream.get()),
                  "cudaMemcpyAsync from rank 1's SHM slot");
            },
            "SHM get");
      },
      [&] { session.barrier(); });
  if (info.rank == 1) expect_device_bytes(session.slot(1), kChecked, 0x5a, "SHM put");
  session.barrier();  // rank 1 keeps its slot until rank 0 is done with it
  return figures;
}

Figures bm_rank(const RankInfo& info) {
  use_device(info.local_rank);
  BmSession session(info, kCopyBytes, kControlTimeoutSeconds);
  info.barrier();  // every rank has joined: copies to rank 1 are accepted
  Figures figures;
  measure_then_meet(
      [&] {
        if (info.rank != 0) return;
        DeviceBuffer local(kCopyBytes, "rank 0's BM buffer");
        fill_device(local.data(), 0x3c, kCopyBytes);
        char* peer = session.device_slot(1);
        auto batch = [&](const void* from, void* to, smem_bm_copy_type type, const char* what) {
          smem_copy_params params{from, to, kCopyBytes};
          for (int i = 0; i < kBmBatch; ++i) {
            check_smem(smem_bm_copy(session.handle(), &params, type, ASYNC_COPY_FLAG), what);
          }
          check_smem(smem_bm_wait(session.handle()), "smem_bm_wait");
        };
        figures["put"] =
            best_wall_seconds(
                [&] { batch(local.data(), peer, SMEMB_COPY_L2G, "smem_bm_copy L2G"); }, 10, 1) /
            kBmBatch;
        figures["get"] =
            best_wall_seconds(
                [&] { batch(peer, local.data(), SMEMB_COPY_G2L, "smem_bm_copy G2L"); }, 10, 1) /
            kBmBatch;
      },
      [&] { info.barrier(); });
  if (info.rank == 1) expect_device_bytes(session.device_slot(1), kChecked, 0x3c, "BM put");
  info.barrier();  // rank 1 leaves only after rank 0 is done
  return figures;
}

Figures trans_rank(const RankInfo& info) {
  use_device(info.local_rank);
  const auto device = static_cast<uint32_t>(info.local_rank);  // each instance's memory is there
  if (info.rank == 1) {  // the target: registers GPU 1 memory and waits for the initiator
    const std::string id = free_loopback_address();
    TransSession session(info, SMEM_TRANS_RECEIVER, id, kControlTimeoutSeconds, device);
    DeviceBuffer pool(kCopyBytes, "rank 1's TRANS target");
    fill_device(pool.data(), 0, kCopyBytes);
    check_smem(smem_trans_register_mem(session.handle(), pool.data(), kCopyBytes, 0),
               "smem_trans_register_mem");
    info.rendezvous->publish(kPoolMailbox, reinterpret_cast<uintptr_t>(pool.data()));
    info.rendezvous->publish(kTargetPortMailbox, std::stoull(id.substr(id.rfind(':') + 1)));
    info.barrier();  // the initiator has finished
    expect_device_bytes(pool.data(), kChecked, 0x71, "TRANS write");
    check_smem(smem_trans_deregister_mem(session.handle(), pool.data()),
               "smem_trans_deregister_mem");
    return {};
  }
  Figures figures;
  measure_then_meet(
      [&] {
        TransSession session(info, SMEM_TRANS_BOTH, free_loopback_address(), kControlTimeoutSeconds,
                             device);
        auto* pool = reinterpret_cast<char*>(info.rendezvous->wait_for(kPoolMailbox));
        const std::string target =
            "127.0.0.1:" + std::to_string(info.rendezvous->wait_for(kTargetPortMailbox));
        DeviceBuffer local(kCopyBytes, "rank 0's TRANS buffer");
        fill_device(local.data(), 0x71, kCopyBytes);
        check_smem(smem_trans_register_mem(session.handle(), local.data(), kCopyBytes, 0),
                   "smem_trans_register_mem (rank 0's buffer)");
        figures["write"] = best_wall_seconds([&] {
          check_smem(
              smem_trans_write(session.handle(), local.data(), target.c_str(), pool, kCopyBytes, 0),
              "smem_trans_write");
        });
        figures["read"] = best_wall_seconds([&] {
          check_smem(
              smem_trans_read(session.handle(), local.data(), target.c_str(), pool, kCopyBytes, 0),
              "smem_trans_read");
        });
        check_smem(smem_trans_deregister_mem(session.handle(), local.data()),
                   "smem_trans_deregister_mem");
      },
      [&] { info.barrier(); });
  return figures;
}

}  // namespace memloom::bench::gpu
