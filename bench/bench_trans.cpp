// memloom-bench trans: MemFabric TRANS reads and writes on the emulated backend, against references
// measured in the same run.
//   - single reads and writes of 4 KiB, 1 MiB and 64 MiB, and batches of 1024 x 4 KiB (scattered
//     on the remote side), initiated by rank 0 into rank 1's smem_trans_malloc memory;
//   - within a node (the direct path: the memory is mapped) vs single-thread memcpy, and across
//     emulated nodes (the UCX transport, over loopback) vs a raw TCP stream
//     between two processes, with an 8-byte write (a synchronous round trip) vs a raw TCP
//     ping-pong;
//   - batched vs the same 4 KiB transfers issued one by one (ops/s), and the batch write vs one
//     write of its 4 MiB, contiguous on both sides (the batch's floor: the same bytes unscattered).
// Across nodes, 3 rounds alternate memloom, raw TCP and memcpy of the same bytes (64 MiB; the
// batch's 4 KiB pieces at its offsets; 8 B), each keeping its best; the memcpy ratios are the
// reference for UCX over shared memory (UCX_TLS=sm,self), where no TCP is in play.
#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "bench/bench_ranks.h"
#include "bench/bench_registry.h"
#include "bench/bench_timing.h"
#include "bench/copy_figures.h"
#include "bench/reference.h"
#include "bench/smem_sessions.h"

namespace memloom::bench {
namespace {

constexpr size_t kSizes[] = {4096, 1u << 20, 64u << 20};
constexpr size_t kLargest = 64u << 20;
constexpr uint32_t kBatch = kBatchPieces;
constexpr size_t kBatchEntry = kBatchPieceBytes;
constexpr int kPoolMailbox = 0, kTargetPortMailbox = 1;

// The target: offers a pool of kLargest bytes and waits until the initiator is done.
Figures target_rank(const RankInfo& info) {
  const std::string id = free_loopback_address();
  TransSession session(info, SMEM_TRANS_RECEIVER, id);
  void* pool = smem_trans_malloc(session.handle(), kLargest);
  if (pool == nullptr) check_smem(-1, "smem_trans_malloc");
  std::memset(pool, 0, kLargest);
  info.rendezvous->publish(kPoolMailbox, reinterpret_cast<uintptr_t>(pool));
  info.rendezvous->publish(kTargetPortMailbox, std::stoull(id.substr(id.rfind(':') + 1)));
  info.barrier();  // the initiator has finished
  expect_pattern(pool, kVerifyBytes, 0x71, "trans write");
  check_smem(smem_trans_free(session.handle(), pool), "smem_trans_free");
  return {};
}

// What the initiator times besides the batches.
struct Singles {
  bool sizes = true;        // off for `memloom-bench trans batch` (profiling the batch path)
  bool round_trip = false;  // the 8-byte write: across nodes only
};

// Batch entries come from the initiator's buffer in order and land scattered over the first
// 4 MiB of the pool (37 is coprime with 1024), as a KV-cache allocator's blocks do, so no two
// entries merge into one contiguous transfer.
BatchOffsets batch_offsets() {
  BatchOffsets offsets;
  for (size_t i = 0; i < kBatch; ++i) {
    offsets.from.push_back(i * kBatchEntry);
    offsets.to.push_back(i * 37 % kBatch * kBatchEntry);
  }
  return offsets;
}

Figures initiator_rank(const RankInfo& info, Singles singles) {
  TransSession session(info, SMEM_TRANS_SENDER, free_loopback_address());
  auto* pool = reinterpret_cast<char*>(info.rendezvous->wait_for(kPoolMailbox));
  const std::string target =
      "127.0.0.1:" + std::to_string(info.rendezvous->wait_for(kTargetPortMailbox));
  std::vector<char> local(kLargest, 1);
  smem_trans_t handle = session.handle();
  Figures figures;

  for (size_t bytes : kSizes) {
    if (!singles.sizes) break;
    const std::string n = std::to_string(bytes);
    std::vector<char> from(bytes, 1), to(bytes, 0);
    auto copy = [&] {
      std::memcpy(to.data(), from.data(), bytes);
      asm volatile("" : : "r"(to.data()) : "memory");
    };
    const PairedTimes writes = time_paired(copy, [&] {
      check_smem(smem_trans_write(handle, local.data(), target.c_str(), pool, bytes, 0),
                 "smem_trans_write");
    });
    const PairedTimes reads = time_paired(copy, [&] {
      check_smem(smem_trans_read(handle, local.data(), target.c_str(), pool, bytes, 0),
                 "smem_trans_read");
    });
    figures["write " + n] = writes.seconds;
    figures["write " + n + " vs memcpy"] = writes.speedup;
    figures["read " + n] = reads.seconds;
    figures["read " + n + " vs memcpy"] = reads.speedup;
    figures["memcpy " + n] = std::min(writes.reference_seconds, reads.reference_seconds);
  }
  if (singles.round_trip) {
    figures["write 8"] = best_seconds_per_op([&] {
      check_smem(smem_trans_write(handle, local.data(), target.c_str(), pool, 8, 0),
                 "smem_trans_write");
    });
  }

  const BatchOffsets offsets = batch_offsets();
  std::vector<const void*> sources(kBatch);
  std::vector<void*> sinks(kBatch), targets(kBatch);
  std::vector<const void*> remote_sources(kBatch);
  std::vector<size_t> sizes(kBatch, kBatchEntry);
  for (uint32_t i = 0; i < kBatch; ++i) {
    char* mine = local.data() + offsets.from[i];
    char* theirs = pool + offsets.to[i];
    sources[i] = mine;
    sinks[i] = mine;
    targets[i] = theirs;
    remote_sources[i] = theirs;
  }
  // Each batch is timed paired with the same 1024 transfers issued one by one, in samples of at
  // least 30 ms for both (as long as the one-by-one loop takes), so both suffer the machine's
  // preemptions alike.
  constexpr int kBatchPairs = 31;
  constexpr double kBatchSampleSeconds = 0.03;
  auto batch_write = [&] {
    check_smem(smem_trans_batch_write(handle, sources.data(), target.c_str(), targets.data(),
                                      sizes.data(), kBatch, 0),
               "smem_trans_batch_write");
  };
  const PairedTimes batch_writes = time_paired(
      [&] {
        for (uint32_t i = 0; i < kBatch; ++i) {
          check_smem(
              smem_trans_write(handle, sources[i], target.c_str(), targets[i], kBatchEntry, 0),
              "smem_trans_write");
        }
      },
      batch_write, kBatchPairs, kBatchSampleSeconds);
  const PairedTimes batch_reads = time_paired(
      [&] {
        for (uint32_t i = 0; i < kBatch; ++i) {
          check_smem(
              smem_trans_read(handle, sinks[i], target.c_str(), remote_sources[i], kBatchEntry, 0),
              "smem_trans_read");
        }
      },
      [&] {
        check_smem(smem_trans_batch_read(handle, sinks.data(), target.c_str(),
                                         remote_sources.data(), sizes.data(), kBatch, 0),
                   "smem_trans_batch_read");
      },
      kBatchPairs, kBatchSampleSeconds);
  // The batch's floor: one write of the bytes it moves, contiguous on both sides. Across nodes
  // the gap is the owner's unpacking of each message into its scattered ranges (README, "Cross-node
  // transport: UCX").
  const PairedTimes batch_vs_one_write = time_paired(
      [&] {
        check_smem(smem_trans_write(handle, local.data(), target.c_str(), pool,
                                    size_t{kBatch} * kBatchEntry, 0),
                   "smem_trans_write");
      },
      batch_write, kBatchPairs, kBatchSampleSeconds);
  figures["batch write vs one write"] = batch_vs_one_write.speedup;
  figures["batch write"] = batch_writes.seconds;
  figures["batch write vs one by one"] = batch_writes.speedup;
  figures["batch read"] = batch_reads.seconds;
  figures["batch read vs one by one"] = batch_reads.speedup;

  // The transfers really move the bytes: a pattern written is read back here and checked by
  // the target in its own memory.
  fill_pattern(local.data(), kVerifyBytes, 0x71);
  check_smem(smem_trans_write(handle, local.data(), target.c_str(), pool, kVerifyBytes, 0),
             "smem_trans_write");
  std::vector<char> back(kVerifyBytes);
  check_smem(smem_trans_read(handle, back.data(), target.c_str(), pool, kVerifyBytes, 0),
             "smem_trans_read");
  expect_pattern(back.data(), kVerifyBytes, 0x71, "trans read");
  info.barrier();  // the target may go
  return figures;
}

std::function<Figures(const RankInfo&)> trans_ranks(Singles singles) {
  return [singles](const RankInfo& info) {
    return info.rank == 0 ? initiator_rank(info, singles) : target_rank(info);
  };
}

// Raw TCP at every size and 8 B (the ping-pong), once per round (15 samples each, about as many
// as the transfers get), keeping each size's best time.
std::map<size_t, double> raw_tcp(std::map<size_t, double> earlier) {
  for (size_t bytes : {size_t(8), kSizes[0], kSizes[1], kSizes[2]}) {
    const double now = tcp_stream_seconds(bytes);
    auto it = earlier.find(bytes);
    earlier[bytes] = it == earlier.end() ? now : std::min(it->second, now);
  }
  return earlier;
}

// `speedup(key, bytes, seconds)` gives a figure's speed-up over the reference.
void report_sizes(const std::string& where, const Figures& ours, const std::string& reference,
                  const std::function<double(const std::string&, size_t, double)>& speedup,
                  double target, VerdictTally& tally) {
  for (size_t bytes : kSizes) {
    for (const char* op : {"write", "read"}) {
      const std::string key = std::string(op) + " " + std::to_string(bytes);
      const double seconds = ours.at(key);
      const CopyDisplay shown = display_copy(bytes, seconds);
      tally.add(report_against("trans " + std::string(op) + " " + format_bytes(bytes) + where,
                               shown.value, shown.unit, speedup(key, bytes, seconds), reference,
                               bytes == kLargest ? std::optional<double>(target) : std::nullopt));
    }
  }
}

void report_batches(const std::string& where, const Figures& ours, std::optional<double> target,
                    VerdictTally& tally) {
  for (const std::string op : {"write", "read"}) {
    tally.add(report_against("trans batch " + op + " 1024 x 4 KiB" + where,
                             kBatch / ours.at("batch " + op) / 1e6, "Mop/s",
                             ours.at("batch " + op + " vs one by one"),
                             "same 4 KiB " + op + "s one by one", target));
  }
  tally.add(report_against(
      "trans batch write 1024 x 4 KiB" + where, kBatch / ours.at("batch write") / 1e6, "Mop/s",
      ours.at("batch write vs one write"), "one 4 MiB write, same bytes", std::nullopt));
}

int run_trans(const std::vector<std::string>& args) {
  const std::string part = args.empty() ? "all" : args[0];
  if (part != "all" && part != "node" && part != "across" && part != "batch") {
    std::fprintf(stderr, "usage: memloom-bench trans [all|node|across|batch]\n");
    return 2;
  }
  VerdictTally tally;
  try {
    if (part == "batch") {
      report_heading("TRANS batches across emulated nodes (" + across_nodes_transport() +
                     " transport over loopback)");
      report_batches(" across nodes", run_ranks(RankJob{2, 2}, trans_ranks({false, false})), 20.0,
                     tally);
      tally.print("trans");
      return 0;
    }
    if (part != "across") {
      report_heading("TRANS within a node (direct path into mapped smem_trans_malloc memory)");
      Figures local = run_ranks(RankJob{2, 1}, trans_ranks({}));
      report_sizes(
          "", local, "memcpy",
          [&](const std::string& key, size_t, double) { return local.at(key + " vs memcpy"); },
          0.85, tally);
      report_batches("", local, std::nullopt, tally);
    }
    if (part == "node") {
      tally.print("trans");
      return 0;
    }
    report_heading("TRANS across emulated nodes (" + across_nodes_transport() +
                   ", over loopback) vs raw TCP");
    Figures remote, copies;
    std::map<size_t, double> tcp;
    for (int round = 0; round < 3; ++round) {
      // Alternating rounds, each side keeping its best: all see the machine's load come and go.
      keep_best_figures(remote, run_ranks(RankJob{2, 2}, trans_ranks({true, true})));
      tcp = raw_tcp(tcp);
      keep_best_figures(copies, memcpy_figures(batch_offsets()));
    }
    report_sizes(
        " across nodes", remote, "raw TCP stream",
        [&](const std::string&, size_t bytes, double seconds) { return tcp.at(bytes) / seconds; },
        0.9, tally);
    report_batches(" across nodes", remote, 20.0, tally);
    const double round_trip = remote.at("write 8");
    tally.add(report_against("trans write 8 B across nodes (round trip)", round_trip * 1e6, "us",
                             tcp.at(8) / round_trip, "raw TCP ping-pong", 1 / 1.2));
    const std::string largest = " " + std::to_string(kLargest);
    report_against_memcpy(
        "trans",
        {{{"write", remote.at("write" + largest)}, {"read", remote.at("read" + largest)}},
         {{"write", remote.at("batch write")}, {"read", remote.at("batch read")}},
         {"write", round_trip}},
        copies, tally);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "memloom-bench trans failed: %s\n", error.what());
    return 1;
  }
  tally.print("trans");
  return 0;
}

}  // namespace
}  // namespace memloom::bench

MEMLOOM_REGISTER_BENCH("trans", "TRANS read/write, single and batched, vs memcpy and raw TCP",
                       memloom::bench::run_trans);
