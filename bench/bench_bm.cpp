// memloom-bench bm: MemFabric BM copies on the emulated backend, against references measured in
// the same run.
//   - put = smem_bm_copy H2G (private host memory to rank 1's device slot), get = G2H, by rank 0
//     with rank 1 on the same node: vs single-thread memcpy and OpenSHMEM putmem/getmem;
//   - the same 64 MiB copies with rank 1 on another emulated node (through the transport, over
//     loopback TCP): informational, vs a raw TCP stream between two processes.
// BM has no barrier or allgather of its own (those are SHM's: see `memloom-bench shm`).
#include <vector>

#include "bench/bench_registry.h"
#include "bench/bench_timing.h"
#include "bench/copy_figures.h"
#include "bench/smem_sessions.h"

namespace memloom::bench {
namespace {

// Rank 0 copies to and from rank 1's device slot at `sizes`; rank 1 stays joined meanwhile.
Figures copy_rank(const RankInfo& info, bool all_sizes) {
  BmSession session(info, kLargestCopy);
  info.barrier();  // every rank has joined: copies to rank 1 are accepted
  Figures figures;
  if (info.rank == 0) {
    char* peer = session.device_slot(1);
    std::vector<char> local(kLargestCopy, 1);
    auto copy = [&](const void* from, void* to, size_t bytes, smem_bm_copy_type type) {
      smem_copy_params params{from, to, bytes};
      check_smem(smem_bm_copy(session.handle(), &params, type, 0), "smem_bm_copy");
    };
    auto put = [&](size_t bytes) { copy(local.data(), peer, bytes, SMEMB_COPY_H2G); };
    auto get = [&](size_t bytes) { copy(peer, local.data(), bytes, SMEMB_COPY_G2H); };
    if (all_sizes) {
      figures = time_puts_and_gets(put, get);
    } else {
      figures["put " + std::to_string(kLargestCopy)] =
          best_seconds_per_op([&] { put(kLargestCopy); });
      figures["get " + std::to_string(kLargestCopy)] =
          best_seconds_per_op([&] { get(kLargestCopy); });
    }
    // The copies really reach rank 1's memory: a pattern put now is checked there below.
    fill_pattern(local.data(), kVerifyBytes, 0x3c);
    put(kVerifyBytes);
  }
  info.barrier();  // rank 0 has put the pattern
  if (info.rank == 1) {
    std::vector<char> seen(kVerifyBytes);
    void* mine = smem_bm_ptr_by_mem_type(session.handle(), SMEM_MEM_TYPE_DEVICE, 1);
    smem_copy_params params{mine, seen.data(), kVerifyBytes};
    check_smem(smem_bm_copy(session.handle(), &params, SMEMB_COPY_G2H, 0), "smem_bm_copy");
    expect_pattern(seen.data(), kVerifyBytes, 0x3c, "bm put");
  }
  info.barrier();  // rank 1 leaves only after rank 0 is done
  return figures;
}

int run_bm(const std::vector<std::string>&) {
  VerdictTally tally;
  try {
    report_heading("BM put (H2G) / get (G2H): rank 0 and rank 1's device slot, same node");
    ReferenceRun shmem = run_openshmem_reference(100);
    Figures copies =
        run_ranks(RankJob{2, 1}, [](const RankInfo& info) { return copy_rank(info, true); });
    keep_best(shmem, run_openshmem_reference(100));
    report_copies("bm", copies, shmem, tally);

    report_heading("BM put/get across emulated nodes (transport over loopback TCP), informational");
    Figures remote =
        run_ranks(RankJob{2, 2}, [](const RankInfo& info) { return copy_rank(info, false); });
    const double tcp = tcp_stream_seconds(kLargestCopy);
    for (const char* op : {"put", "get"}) {
      const double seconds = remote.at(std::string(op) + " " + std::to_string(kLargestCopy));
      const CopyDisplay shown = display_copy(kLargestCopy, seconds);
      tally.add(report_against(std::string("bm ") + op + " 64 MiB across nodes", shown.value,
                               shown.unit, tcp / seconds, "raw TCP stream", std::nullopt));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "memloom-bench bm failed: %s\n", error.what());
    return 1;
  }
  tally.print("bm");
  return 0;
}

}  // namespace
}  // namespace memloom::bench

MEMLOOM_REGISTER_BENCH("bm", "BM copies (H2G/G2H) vs memcpy, OpenSHMEM, and across nodes vs TCP",
                       memloom::bench::run_bm);
