#include "bench/copy_figures.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "bench/bench_timing.h"

namespace memloom::bench {

Figures time_puts_and_gets(const std::function<void(size_t)>& put,
                           const std::function<void(size_t)>& get) {
  std::vector<char> from(kLargestCopy, 1), to(kLargestCopy, 0);
  // The reference memcpy goes through the same kind of call as put and get, so at 8 B both pay
  // the same call overhead and the ratio compares the copies.
  const std::function<void(size_t)> copy = [&](size_t bytes) {
    std::memcpy(to.data(), from.data(), bytes);
    asm volatile("" : : "r"(to.data()) : "memory");
  };
  Figures figures;
  for (size_t bytes : kCopySizes) {
    const std::string n = std::to_string(bytes);
    const PairedTimes puts = time_paired([&] { copy(bytes); }, [&] { put(bytes); });
    const PairedTimes gets = time_paired([&] { copy(bytes); }, [&] { get(bytes); });
    figures["put " + n] = puts.seconds;
    figures["put " + n + " vs memcpy"] = puts.speedup;
    figures["get " + n] = gets.seconds;
    figures["get " + n + " vs memcpy"] = gets.speedup;
    figures["memcpy " + n] = std::min(puts.reference_seconds, gets.reference_seconds);
  }
  return figures;
}

ReferenceRun run_openshmem_reference(int64_t barrier_iterations) {
  std::vector<std::string> args{std::to_string(barrier_iterations)};
  for (size_t bytes : kCopySizes) args.push_back(std::to_string(bytes));
  return run_reference_program(Launcher::kOpenShmem, "memloom-ref-shmem-putget", 2, args, 300);
}

void keep_best(ReferenceRun& best, const ReferenceRun& other) {
  if (!other.available) return;
  if (!best.available) {
    best = other;
    return;
  }
  for (const auto& [name, seconds] : other.figures) {
    auto it = best.figures.find(name);
    if (it == best.figures.end() || seconds < it->second) best.figures[name] = seconds;
  }
}

CopyDisplay display_copy(size_t bytes, double seconds) {
  if (bytes >= (1u << 20)) return {static_cast<double>(bytes) / seconds / 1e9, "GB/s"};
  return {seconds * 1e6, "us"};
}

void report_copies(const std::string& api, const Figures& ours, const ReferenceRun& shmem,
                   VerdictTally& tally, bool with_targets) {
  for (size_t bytes : kCopySizes) {
    const bool largest = with_targets && bytes == kLargestCopy;
    for (const char* op : {"put", "get"}) {
      const std::string key = std::string(op) + " " + std::to_string(bytes);
      const double seconds = ours.at(key);
      const CopyDisplay shown = display_copy(bytes, seconds);
      const std::string name = api + " " + op + " " + format_bytes(bytes);
      tally.add(report_against(name, shown.value, shown.unit, ours.at(key + " vs memcpy"), "memcpy",
                               largest ? std::optional<double>(0.85) : std::nullopt));
      const std::string reference = std::string(op) + "mem " + std::to_string(bytes);
      std::optional<double> theirs = shmem.figure(reference);
      tally.add(report_against(name, shown.value, shown.unit,
                               theirs ? std::optional<double>(*theirs / seconds) : std::nullopt,
                               "OpenSHMEM " + std::string(op) + "mem",
                               largest ? std::optional<double>(1.5) : std::nullopt, shmem.why));
    }
  }
}

void fill_pattern(void* data, size_t bytes, int seed) {
  auto* out = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(seed + i * 7 + (i >> 12));
}

void expect_pattern(const void* data, size_t bytes, int seed, const std::string& what) {
  const auto* in = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    if (in[i] != static_cast<unsigned char>(seed + i * 7 + (i >> 12))) {
      throw std::runtime_error(what + ": the bytes did not arrive (first difference at offset " +
                               std::to_string(i) + ")");
    }
  }
}

std::string across_nodes_transport() {
  const char* transports = std::getenv("UCX_TLS");
  return std::string("UCX transport, UCX_TLS=") +
         (transports != nullptr && *transports != '\0' ? transports : "unset");
}

Figures memcpy_figures(const BatchOffsets& batch) {
  std::vector<char> from(kLargestCopy, 1), to(kLargestCopy, 0);
  Figures figures;
  figures["memcpy " + std::to_string(kLargestCopy)] =
      best_seconds_per_op([&] { std::memcpy(to.data(), from.data(), kLargestCopy); });
  figures["memcpy batch"] = best_seconds_per_op(
      [&] {
        for (size_t i = 0; i < batch.from.size(); ++i) {
          std::memcpy(to.data() + batch.to[i], from.data() + batch.from[i], kBatchPieceBytes);
        }
      },
      7);
  figures["memcpy 8"] = best_seconds_per_op([&] {
    std::memcpy(to.data(), from.data(), 8);
    asm volatile("" : : "r"(to.data()) : "memory");  // the copy is not optimised away
  });
  return figures;
}

void keep_best_figures(Figures& best, const Figures& now) {
  for (const auto& [name, value] : now) {
    auto [it, inserted] = best.emplace(name, value);
    if (inserted) continue;
    const bool speedup = name.find(" vs ") != std::string::npos;
    it->second = speedup ? std::max(it->second, value) : std::min(it->second, value);
  }
}

void report_against_memcpy(const std::string& api, const AcrossNodeSeconds& ours,
                           const Figures& copies, VerdictTally& tally) {
  std::string heading = api;
  for (char& c : heading) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  report_heading(heading + " across emulated nodes, the same rounds vs memcpy of the same bytes");
  const auto against = [&](const std::string& name, double value, const char* unit, double seconds,
                           const std::string& key) {
    // memcpy's own time in the reference's name: an 8-byte memcpy's ratio rounds to 0.00x.
    const double reference = copies.at(key);
    char reference_name[64];
    std::snprintf(reference_name, sizeof(reference_name), "memcpy (%.3g us)", reference * 1e6);
    tally.add(report_against(name, value, unit, reference / seconds, reference_name, std::nullopt));
  };
  for (const auto& [op, seconds] : ours.largest) {
    const CopyDisplay shown = display_copy(kLargestCopy, seconds);
    against(api + " " + op + " " + format_bytes(kLargestCopy) + " across nodes", shown.value,
            shown.unit, seconds, "memcpy " + std::to_string(kLargestCopy));
  }
  for (const auto& [op, seconds] : ours.batches) {
    against(api + " batch " + (op.empty() ? "" : op + " ") + std::to_string(kBatchPieces) + " x " +
                format_bytes(kBatchPieceBytes) + " across nodes",
            seconds * 1e3, "ms", seconds, "memcpy batch");
  }
  const auto& [op, seconds] = ours.smallest;
  against(api + " " + op + " 8 B across nodes (round trip)", seconds * 1e6, "us", seconds,
          "memcpy 8");
}

}  // namespace memloom::bench
