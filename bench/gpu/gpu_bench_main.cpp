// memloom-bench-gpu: the CUDA backend's figures, each against a ceiling plain CUDA reaches in the
// same run (issue 7). Every measurement runs in ranks forked for it (the parent never touches
// CUDA, so it can fork every job); a failing or hung job is reported and killed after its
// timeout, and the program goes on with the next figure.
//
//   memloom-bench-gpu [--only ceilings|local|embedding|sampling|gather|shm|bm|trans[,...]]
//                     [--markdown PATH] [--sampling-edges N]   (N: the sampling graph, 100M)
//
// Exit code: 0 when every figure was measured and met its target, 1 otherwise, 2 when no CUDA
// device can be used or the arguments are wrong.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_ranks.h"
#include "bench/gpu/gpu_figures.h"
#include "bench/gpu/gpu_report.h"

namespace memloom::bench::gpu {
namespace {

const char* const kGroups[] = {"ceilings", "local", "embedding", "sampling",
                               "gather",   "shm",   "bm",        "trans"};
constexpr std::chrono::seconds kJobTimeout{150};

struct Options {
  std::string only;  // empty: every group
  std::string markdown;
  long long sampling_edges = 100000000;  // the graph: 100M edges
};

bool parse(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--only" || arg == "--markdown") && i + 1 < argc) {
      (arg == "--only" ? options->only : options->markdown) = argv[++i];
    } else if (arg == "--sampling-edges" && i + 1 < argc) {
      options->sampling_edges = std::atoll(argv[++i]);
      if (options->sampling_edges < 1000 || options->sampling_edges > INT32_MAX) return false;
    } else {
      return false;
    }
  }
  // --only takes one group or a comma-separated list of them.
  std::string list = options->only + ",";
  for (size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos;
       start = comma + 1) {
    const std::string group = list.substr(start, comma - start);
    bool known = false;
    for (const char* name : kGroups) known = known || group == name;
    if (!known) return false;
  }
  return true;
}

// Runs a job of `ranks` ranks; on failure prints why (naming the group) and returns no figures,
// so each figure of the group is then reported FAILED.
Figures run_job(const std::string& group, int ranks,
                const std::function<Figures(const RankInfo&)>& body, int nodes = 1) {
  try {
    return run_ranks(RankJob{ranks, nodes, kJobTimeout}, body);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "memloom-bench-gpu: %s: FAILED: %s\n", group.c_str(), error.what());
    return {};
  }
}

std::optional<double> figure(const Figures& figures, const std::string& name) {
  auto it = figures.find(name);
  if (it == figures.end() || it->second <= 0) return std::nullopt;
  return it->second;
}

// bytes / seconds in GB/s, absent when seconds is.
std::optional<double> rate(double bytes, std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return bytes / *seconds / 1e9;
}

std::string micros(std::optional<double> seconds) {
  if (!seconds) return "";
  char text[48];
  std::snprintf(text, sizeof(text), "%.1f us per call", *seconds * 1e6);
  return text;
}

struct Ceilings {
  std::optional<double> d2d, peer_copy, peer_read;  // GB/s
  std::optional<double> peer_read_both;             // GB/s per GPU, both reading at once
};

Ceilings measure_ceilings(Report& report, int devices) {
  const Figures figures = run_job("ceilings", 1, ceilings_rank);
  Ceilings ceilings{rate(2.0 * kD2DBytes, figure(figures, "d2d")),
                    rate(double(kCopyBytes), figure(figures, "peer copy")),
                    rate(double(kCopyBytes), figure(figures, "peer read")),
                    rate(double(kCopyBytes), figure(figures, "peer read both ways"))};
  report.add({"ceiling: D2D cudaMemcpy GPU0, 1 GiB (r+w)",
              ceilings.d2d,
              "GB/s",
              {},
              "",
              {},
              "2 x bytes / time"});
  if (devices < 2) {
    report.add({"ceiling: GPU-to-GPU copies (2 GPUs)",
                std::nullopt,
                "",
                {},
                "",
                {},
                "skipped: this machine has one GPU"});
    return ceilings;
  }
  report.add(
      {"ceiling: cudaMemcpyPeer GPU0->GPU1 64 MiB", ceilings.peer_copy, "GB/s", {}, "", {}, ""});
  report.add({"ceiling: peer read GPU1->GPU0 64 MiB",
              ceilings.peer_read,
              "GB/s",
              {},
              "",
              {},
              "cudaMemcpyPeer issued on GPU 0"});
  report.add({"ceiling: peer reads both ways at once, per GPU",
              ceilings.peer_read_both,
              "GB/s",
              {},
              "",
              {},
              "GPU 0 and GPU 1 each read 64 MiB of the other"});
  return ceilings;
}

// Where the apply's time goes (gpu_embedding.cpp), as REPORT rows in microseconds per call with
// their share of a whole call: the call's variants (no row updated, one index), then each phase of
// a second run whose kernels, copies and grouping steps the backend timed with events. A phase
// named "a.b" is step b inside phase a; "host or idle" is the call less its top-level phases (the
// stream waiting for the host: launches, waits, allocations).
void embedding_breakdown(Report& report, const Figures& apply, const Ceilings& ceilings) {
  auto us = [](std::optional<double> seconds) -> std::optional<double> {
    if (!seconds) return std::nullopt;
    return *seconds * 1e6;
  };
  const auto whole = us(figure(apply, "apply"));
  report.add({"apply breakdown: every index -1 (checked and grouped, no row updated)",
              us(figure(apply, "apply no row")), "us", whole, "the whole apply", std::nullopt, ""});
  report.add({"apply breakdown: a single index (the call's fixed cost)",
              us(figure(apply, "apply one row")), "us", whole, "the whole apply", std::nullopt,
              ""});
  const double bytes = 7.0 * kApplyRows * kRowBytes;
  const auto reference = rate(bytes, figure(apply, "reference step"));
  report.add({"apply breakdown: the bench's plain lazy-Adam kernel, same bytes", reference, "GB/s",
              ceilings.d2d, "D2D cudaMemcpy", std::nullopt,
              micros(figure(apply, "reference step"))});
  const Figures phases = run_job("embedding apply phases", 1, embedding_phases_rank);
  const auto update = figure(phases, "phase optimizer_apply.update_rows");
  report.add({"apply phase (timed run): optimizer_apply.update_rows, bandwidth",
              rate(bytes, update), "GB/s", reference, "the bench's plain kernel", std::nullopt,
              micros(update)});
  const auto call = us(figure(phases, "call"));
  double top_level = 0;
  for (const auto& [name, seconds] : phases) {
    if (name.rfind("phase ", 0) != 0) continue;
    const std::string phase = name.substr(6);
    if (phase.find('.') == std::string::npos) top_level += seconds * 1e6;
    report.add({"apply phase (timed run): " + phase, seconds * 1e6, "us", call,
                "the timed run's call", std::nullopt,
                phase.find('.') == std::string::npos ? "" : "step"});
  }
  std::optional<double> idle;
  if (call) idle = *call - top_level;
  report.add({"apply phase (timed run): host or idle (call - phases)", idle, "us", call,
              "the timed run's call", std::nullopt, ""});
}

// The bytes an apply must touch per row: the row and its two states read and written, the
// gradient read (7 row sizes); the target is 0.7x of the D2D copy bandwidth over them.
void embedding_apply(Report& report, const Ceilings& ceilings) {
  const Figures figures = run_job("embedding apply", 1, embedding_apply_rank);
  const auto seconds = figure(figures, "apply");
  report.add({"embedding apply, lazy Adam, 1M x 512 B rows (row, grad, 2 states)",
              rate(7.0 * kApplyRows * kRowBytes, seconds), "GB/s", ceilings.d2d, "D2D cudaMemcpy",
              0.7, micros(seconds)});
  embedding_breakdown(report, figures, ceilings);
}

// Sampled edges per second, against the bench's plain CUDA sampler in the same job (issue 21's
// target: at least as fast).
void sampling(Report& report, long long edges) {
  const Figures figures = run_job("sampling", 1, [edges](const RankInfo& info) {
    return sampling_rank(info, static_cast<int64_t>(edges));
  });
  const auto samples = figure(figures, "sampled edges");
  const double count = samples ? *samples : 0;
  const auto graph = figure(figures, "graph edges");
  char name[160];
  std::snprintf(name, sizeof(name),
                "unweighted sampling, fanout 30, 1M centres, power-law graph of %.0fM edges",
                (graph ? *graph : static_cast<double>(edges)) / 1e6);
  report.add({name, rate(count, figure(figures, "sample")), "G sampled edges/s",
              rate(count, figure(figures, "sample reference")), "plain CUDA sampler (bench)", 1.0,
              micros(figure(figures, "sample"))});
}

void local_gather(Report& report, const Ceilings& ceilings) {
  const Figures figures = run_job("local gather", 1, local_gather_rank);
  const auto seconds = figure(figures, "gather");
  report.add({"local gather 1M x 512 B rows (r+w)", rate(2.0 * kGatherRows * kRowBytes, seconds),
              "GB/s", ceilings.d2d, "D2D cudaMemcpy", 0.85, micros(seconds)});
}

// The slowest rank's gather time: the job's time, every rank gathering at once.
std::optional<double> slowest(const Figures& figures, int ranks) {
  double worst = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    auto seconds = figure(figures, "gather rank " + std::to_string(rank));
    if (!seconds) return std::nullopt;
    worst = std::max(worst, *seconds);
  }
  return worst;
}

void spread_gathers(Report& report, const Ceilings& ceilings) {
  // Half of each rank's rows are on the other GPU: the NVLink-bound time is those bytes at the
  // peer-read bandwidth, so remote bytes / measured time against that bandwidth is the ratio
  // estimate / measured.
  const double remote_bytes = 0.5 * kGatherRows * kRowBytes;
  auto run = [&](wholememory_memory_type_t type, const char* name) {
    return slowest(run_job(std::string("gather ") + name, 2,
                           [type](const RankInfo& info) { return spread_gather_rank(info, type); }),
                   2);
  };
  // Rank 0 gathering alone from the table over both GPUs reads over NVLink one way, the traffic
  // of the one-way peer-read ceiling: the target is judged on this pair.
  const auto alone =
      slowest(run_job("gather CONTINUOUS, rank 0 alone", 2,
                      [](const RankInfo& info) {
                        return rank_zero_gather_rank(info, WHOLEMEMORY_MT_CONTINUOUS);
                      }),
              1);
  report.add({"CONTINUOUS gather, 2 GPUs, rank 0 gathering (remote bytes)",
              rate(remote_bytes, alone), "GB/s", ceilings.peer_read, "NVLink-bound: peer read", 0.9,
              micros(alone)});
  // Both ranks gathering at once (as in training) load NVLink both ways: reported against the
  // one-way ceiling and against the ceiling of reads both ways at once.
  const auto continuous = run(WHOLEMEMORY_MT_CONTINUOUS, "CONTINUOUS");
  report.add({"CONTINUOUS gather, 2 GPUs, both gathering (remote bytes)",
              rate(remote_bytes, continuous), "GB/s", ceilings.peer_read, "NVLink-bound: peer read",
              std::nullopt, micros(continuous)});
  report.add({"CONTINUOUS gather, 2 GPUs, both gathering (remote bytes)",
              rate(remote_bytes, continuous), "GB/s", ceilings.peer_read_both,
              "peer reads both ways", std::nullopt, micros(continuous)});
  const auto chunked = run(WHOLEMEMORY_MT_CHUNKED, "CHUNKED");
  report.add({"CHUNKED gather, 2 GPUs (remote bytes)", rate(remote_bytes, chunked), "GB/s",
              ceilings.peer_read, "NVLink-bound: peer read", std::nullopt, micros(chunked)});
  const auto distributed = run(WHOLEMEMORY_MT_DISTRIBUTED, "DISTRIBUTED");
  const double output_bytes = double(kGatherRows) * kRowBytes;
  report.add({"DISTRIBUTED gather, 2 GPUs (output bytes)", rate(output_bytes, distributed), "GB/s",
              rate(output_bytes, continuous), "CONTINUOUS gather", std::nullopt,
              micros(distributed)});
  // Two emulated nodes of one GPU each: every remote row crosses "nodes" through the gateways.
  const auto hierarchy =
      slowest(run_job(
                  "gather HIERARCHY", 2,
                  [](const RankInfo& info) {
                    return node_per_gpu_gather_rank(info, WHOLEMEMORY_MT_HIERARCHY);
                  },
                  2),
              2);
  report.add({"HIERARCHY gather, 2 GPUs as 2 emulated nodes (output bytes)",
              rate(output_bytes, hierarchy), "GB/s", rate(output_bytes, continuous),
              "CONTINUOUS gather", std::nullopt, micros(hierarchy)});
}

void copies(Report& report, const std::string& group, const Ceilings& ceilings) {
  const double bytes = double(kCopyBytes);
  if (group == "shm") {
    const Figures figures = run_job("SHM", 2, shm_rank);
    report.add({"SHM put GPU0->GPU1 slot 64 MiB", rate(bytes, figure(figures, "put")), "GB/s",
                ceilings.peer_copy, "cudaMemcpyPeer", 0.9, "cudaMemcpyAsync through the GVA"});
    report.add({"SHM get GPU1 slot->GPU0 64 MiB", rate(bytes, figure(figures, "get")), "GB/s",
                ceilings.peer_read, "peer read", 0.9, "cudaMemcpyAsync through the GVA"});
  } else if (group == "bm") {
    const Figures figures = run_job("BM", 2, bm_rank);
    report.add({"BM copy L2G GPU0->GPU1 slot 64 MiB", rate(bytes, figure(figures, "put")), "GB/s",
                ceilings.peer_copy, "cudaMemcpyPeer", 0.9, micros(figure(figures, "put"))});
    report.add({"BM copy G2L GPU1 slot->GPU0 64 MiB", rate(bytes, figure(figures, "get")), "GB/s",
                ceilings.peer_read, "peer read", 0.9, micros(figure(figures, "get"))});
  } else {
    const Figures figures = run_job("TRANS", 2, trans_rank);
    report.add({"TRANS write GPU0->GPU1 64 MiB", rate(bytes, figure(figures, "write")), "GB/s",
                ceilings.peer_copy, "cudaMemcpyPeer", 0.9, micros(figure(figures, "write"))});
    report.add({"TRANS read GPU1->GPU0 64 MiB", rate(bytes, figure(figures, "read")), "GB/s",
                ceilings.peer_read, "peer read", 0.9, micros(figure(figures, "read"))});
  }
}

std::string heading(int devices) {
  char host[256] = "unknown host";
  ::gethostname(host, sizeof(host) - 1);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return std::string("memloom-bench-gpu, ") + date + ", " + host + ", " + std::to_string(devices) +
         " GPU" + (devices == 1 ? "" : "s");
}

int run(const Options& options) {
  // The ranks inherit these; the caller's own settings win.
  ::setenv("MEMLOOM_BACKEND", "cuda", 0);
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  ::setenv("MEMLOOM_TIMEOUT_S", "60", 0);  // collectives give up well before a job's timeout

  int devices = 0;
  try {
    const Figures probe = run_ranks(RankJob{1, 1, std::chrono::seconds(60)}, probe_rank);
    devices = static_cast<int>(probe.at("devices"));
  } catch (const std::exception& error) {
    std::string why = error.what();
    while (!why.empty() && why.back() == '\n') why.pop_back();
    std::fprintf(stderr, "memloom-bench-gpu: no CUDA device can be used: %s\n", why.c_str());
    if (!options.markdown.empty()) {
      Report().append_markdown(options.markdown,
                               heading(0) + ": no CUDA device can be used (" + why + ")");
    }
    return 2;
  }
  std::printf("memloom-bench-gpu: %d CUDA device%s, MEMLOOM_BACKEND=%s\n", devices,
              devices == 1 ? "" : "s", std::getenv("MEMLOOM_BACKEND"));

  Report report;
  const Ceilings ceilings = measure_ceilings(report, devices);  // every other figure needs them
  auto wanted = [&](const char* group) {
    return options.only.empty() ||
           ("," + options.only + ",").find("," + std::string(group) + ",") != std::string::npos;
  };
  if (wanted("local")) local_gather(report, ceilings);
  if (wanted("embedding")) embedding_apply(report, ceilings);
  if (wanted("sampling")) sampling(report, options.sampling_edges);
  for (const char* group : {"gather", "shm", "bm", "trans"}) {
    if (!wanted(group)) continue;
    if (devices < 2) {
      report.add({std::string(group) + " (2 GPUs)",
                  std::nullopt,
                  "",
                  {},
                  "two GPUs",
                  {},
                  "skipped: this machine has one GPU"});
      continue;
    }
    if (std::string(group) == "gather") {
      spread_gathers(report, ceilings);
    } else {
      copies(report, group, ceilings);
    }
  }
  if (!options.markdown.empty() && !report.append_markdown(options.markdown, heading(devices))) {
    return 1;
  }
  std::printf("memloom-bench-gpu: %d missed target(s), %d failed figure(s)\n", report.misses(),
              report.failures());
  return report.misses() == 0 && report.failures() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace memloom::bench::gpu

int main(int argc, char** argv) {
  memloom::bench::gpu::Options options;
  if (!memloom::bench::gpu::parse(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: memloom-bench-gpu [--only ceilings|local|embedding|sampling|gather|shm|bm|"
                 "trans] [--markdown PATH] [--sampling-edges N (1000..2^31-1, default 1e8)]\n");
    return 2;
  }
  return memloom::bench::gpu::run(options);
}
