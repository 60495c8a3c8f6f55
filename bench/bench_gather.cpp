// memloom-bench gather: WholeMemory gather of random rows from an embedding table spread over
// several ranks (forked here, all on one emulated node or spread over two), for each memory
// type: CONTINUOUS, CHUNKED and DISTRIBUTED on one node, HIERARCHY over two nodes. Prints rows/s
// and bytes/s of the whole job (every rank gathering at once) and their ratio to a single-thread
// memcpy of the same bytes, which rank 0 measures between the gathers while the other ranks wait.
// The ratio is paired (as bench_timing.h's time_paired): each gather of the job is timed next to
// one memcpy, alternating which goes first, and the median of the pairs' ratios is printed, so
// that each ratio compares two moments of the same load on this shared machine.
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_registry.h"
#include "bench/reference.h"
#include "examples/common/wholememory_buffers.h"
#include "memloom/stream.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/blocking_copy.h"
#include "wholememory/wholememory_op.h"

namespace {

struct Options {
  size_t rows = 1u << 20;        // rows each rank gathers
  size_t table_rows = 1u << 18;  // rows of the table (128 MiB at 512 B)
  size_t row_bytes = 512;
  int ranks = 2;
  int repeat = 11;  // timed pairs (gather of the job, memcpy)
  std::vector<std::string> types;
};

struct Config {
  const char* name;
  wholememory_memory_type_t type;
  int nodes;
};

const Config kConfigs[] = {
    {"continuous", WHOLEMEMORY_MT_CONTINUOUS, 1},
    {"chunked", WHOLEMEMORY_MT_CHUNKED, 1},
    {"distributed", WHOLEMEMORY_MT_DISTRIBUTED, 1},
    {"hierarchy", WHOLEMEMORY_MT_HIERARCHY, 2},
};

constexpr int kChildTimeoutMs = 300000;
constexpr int kMaxRepeat = 63;

// Targets of the issue (ratio to memcpy), by memory type; the others are reported without one.
std::optional<double> target_of(wholememory_memory_type_t type) {
  if (type == WHOLEMEMORY_MT_CONTINUOUS || type == WHOLEMEMORY_MT_CHUNKED) return 0.7;
  return std::nullopt;
}

bool parse(const std::vector<std::string>& args, Options* options) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const char* { return i + 1 < args.size() ? args[++i].c_str() : nullptr; };
    const char* text = nullptr;
    if (arg == "--type" && (text = value())) {
      options->types.push_back(text);
    } else if ((arg == "--rows" || arg == "--table-rows" || arg == "--row-bytes" ||
                arg == "--ranks" || arg == "--repeat") &&
               (text = value())) {
      const unsigned long long number = std::strtoull(text, nullptr, 10);
      if (number == 0) return false;
      if (arg == "--rows") options->rows = number;
      if (arg == "--table-rows") options->table_rows = number;
      if (arg == "--row-bytes") options->row_bytes = number;
      if (arg == "--ranks") options->ranks = static_cast<int>(number);
      if (arg == "--repeat") options->repeat = static_cast<int>(number);
    } else {
      return false;
    }
  }
  return options->row_bytes % 4 == 0 && options->ranks >= 1 && options->ranks <= 64 &&
         options->repeat <= kMaxRepeat;
}

void usage() {
  std::fprintf(stderr,
               "usage: memloom-bench gather [--type continuous|chunked|distributed|hierarchy]...\n"
               "         [--rows N] [--table-rows N] [--row-bytes N (multiple of 4)] [--ranks N]\n"
               "         [--repeat N (pairs, at most 63)]\n");
}

bool read_exactly(int fd, void* out, size_t bytes, int timeout_ms) {
  auto* cursor = static_cast<char*>(out);
  while (bytes > 0) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, timeout_ms) <= 0) return false;
    const ssize_t got = ::read(fd, cursor, bytes);
    if (got <= 0) return false;
    cursor += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

// Device memory from the default environment, released when the object goes.
struct DeviceMemory : memloom_examples::EnvMemory {
  explicit DeviceMemory(size_t bytes) : EnvMemory(bytes, WHOLEMEMORY_MA_DEVICE) {}
};

void copy(void* dst, const void* src, size_t bytes) {
  memloom::wholememory::BlockingCopier(memloom::core::platform().current_device())
      .copy(dst, src, bytes);
}

wholememory_tensor_t pointer_tensor(void* data, wholememory_tensor_description_t desc) {
  wholememory_tensor_t tensor = nullptr;
  if (wholememory_make_tensor_from_pointer(&tensor, data, &desc) != WHOLEMEMORY_SUCCESS) {
    return nullptr;
  }
  return tensor;
}

// One rank's samples: sample i of every rank is the same gather of the job (between the same
// barriers), paired with rank 0's memcpy i. Fixed-size, so it crosses a pipe in one write.
struct Timing {
  int samples = 0;                          // 0 on failure
  std::array<double, kMaxRepeat> gather{};  // seconds of this rank's gather i
  std::array<double, kMaxRepeat> memcpy{};  // seconds of memcpy i (rank 0 only)
  // CPU seconds of the whole process (every thread) over the same gather and memcpy
  std::array<double, kMaxRepeat> gather_cpu{};
  std::array<double, kMaxRepeat> memcpy_cpu{};
};

double process_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// One rank's part: builds the table (column 0 of row e holds e), gathers, checks, times.
// Returns negative times on failure.
Timing run_rank(const Options& options, const Config& config, int rank, int id_read, int id_write) {
  if (wholememory_init(0, LEVEL_WARN) != WHOLEMEMORY_SUCCESS) return {};
  wholememory_unique_id_t id{};
  if (rank == 0) {
    if (wholememory_create_unique_id(&id) != WHOLEMEMORY_SUCCESS) return {};
    for (int r = 1; r < options.ranks; ++r) {
      if (::write(id_write, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return {};
    }
  } else if (!read_exactly(id_read, &id, sizeof(id), kChildTimeoutMs)) {
    return {};
  }
  wholememory_comm_t comm = nullptr;
  if (wholememory_create_communicator(&comm, id, rank, options.ranks) != WHOLEMEMORY_SUCCESS) {
    return {};
  }
  const auto columns = static_cast<int64_t>(options.row_bytes / 4);
  wholememory_tensor_description_t desc = memloom_examples::packed_description(
      static_cast<int64_t>(options.table_rows), columns, WHOLEMEMORY_DT_FLOAT);
  wholememory_tensor_t table = nullptr;
  if (wholememory_create_tensor(&table, &desc, comm, config.type, WHOLEMEMORY_ML_DEVICE) !=
      WHOLEMEMORY_SUCCESS) {
    return {};
  }
  wholememory_tensor_t local = nullptr;
  size_t first = 0;
  if (wholememory_tensor_map_local_tensor(table, &local) != WHOLEMEMORY_SUCCESS ||
      wholememory_tensor_get_local_entry_start(&first, table) != WHOLEMEMORY_SUCCESS) {
    return {};
  }
  const auto local_rows =
      static_cast<size_t>(wholememory_tensor_get_tensor_description(local)->sizes[0]);
  std::vector<float> rows(local_rows * columns);
  for (size_t r = 0; r < local_rows; ++r) rows[r * columns] = static_cast<float>(first + r);
  if (!rows.empty()) {
    copy(wholememory_tensor_get_data_pointer(local), rows.data(), rows.size() * sizeof(float));
  }
  rows = {};
  wholememory_destroy_tensor(local);

  std::mt19937_64 rng(1234 + rank);
  std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(options.table_rows) - 1);
  std::vector<int64_t> indices(options.rows);
  for (auto& index : indices) index = pick(rng);
  DeviceMemory index_memory(indices.size() * sizeof(int64_t));
  DeviceMemory output_memory(options.rows * options.row_bytes);
  if (index_memory.data() == nullptr || output_memory.data() == nullptr) return {};
  copy(index_memory.data(), indices.data(), indices.size() * sizeof(int64_t));
  wholememory_tensor_description_t index_desc = memloom_examples::packed_description(
      static_cast<int64_t>(options.rows), 0, WHOLEMEMORY_DT_INT64);
  auto output_desc = desc;
  output_desc.sizes[0] = static_cast<int64_t>(options.rows);
  wholememory_tensor_t index_tensor = pointer_tensor(index_memory.data(), index_desc);
  wholememory_tensor_t output_tensor = pointer_tensor(output_memory.data(), output_desc);
  memloom_stream_t stream = nullptr;
  if (index_tensor == nullptr || output_tensor == nullptr ||
      memloom_stream_create(&stream) != MEMLOOM_STATUS_SUCCESS ||
      wholememory_communicator_barrier(comm) != WHOLEMEMORY_SUCCESS) {
    return {};
  }

  // One gather to warm up (page faults, temporary memory), checked row by row.
  if (wholememory_gather(table, index_tensor, output_tensor, nullptr, stream) !=
          WHOLEMEMORY_SUCCESS ||
      memloom_stream_synchronize(stream) != MEMLOOM_STATUS_SUCCESS) {
    return {};
  }
  std::vector<float> gathered(options.rows * columns);
  copy(gathered.data(), output_memory.data(), gathered.size() * sizeof(float));
  for (size_t i = 0; i < options.rows; ++i) {
    if (gathered[i * columns] != static_cast<float>(indices[i])) {
      std::fprintf(stderr, "gather %s: rank %d row %zu holds %g, expected row %lld\n", config.name,
                   rank, i, gathered[i * columns], static_cast<long long>(indices[i]));
      return {};
    }
  }
  gathered = {};

  // Rank 0's reference buffers; the other ranks do not copy.
  const size_t copy_bytes = rank == 0 ? options.rows * options.row_bytes : 0;
  std::vector<char> copy_source(copy_bytes, 1), copy_target(copy_bytes, 0);
  std::memcpy(copy_target.data(), copy_source.data(), copy_bytes);  // fault the pages in
  Timing timing;
  auto timed_copy = [&](int i) {
    const double cpu = process_cpu_seconds();
    const double start = memloom::bench::now_seconds();
    std::memcpy(copy_target.data(), copy_source.data(), copy_bytes);
    asm volatile("" : : "r"(copy_target.data()) : "memory");
    timing.memcpy[i] = memloom::bench::now_seconds() - start;
    timing.memcpy_cpu[i] = process_cpu_seconds() - cpu;
  };
  auto timed_gather = [&](int i) {
    const double cpu = process_cpu_seconds();
    const double start = memloom::bench::now_seconds();
    if (wholememory_gather(table, index_tensor, output_tensor, nullptr, stream) !=
            WHOLEMEMORY_SUCCESS ||
        memloom_stream_synchronize(stream) != MEMLOOM_STATUS_SUCCESS) {
      return false;
    }
    timing.gather[i] = memloom::bench::now_seconds() - start;
    timing.gather_cpu[i] = process_cpu_seconds() - cpu;
    return true;
  };
  for (int i = 0; i < options.repeat; ++i) {
    // Pairs alternate which goes first, so neither side always follows the other's wake-up.
    const bool copy_first = i % 2 == 0;
    if (wholememory_communicator_barrier(comm) != WHOLEMEMORY_SUCCESS) return {};
    if (copy_first) timed_copy(i);
    if (!copy_first && !timed_gather(i)) return {};
    if (wholememory_communicator_barrier(comm) != WHOLEMEMORY_SUCCESS) return {};
    if (!copy_first) timed_copy(i);
    if (copy_first && !timed_gather(i)) return {};
  }
  timing.samples = options.repeat;
  memloom_stream_destroy(stream);
  wholememory_destroy_tensor(index_tensor);
  wholememory_destroy_tensor(output_tensor);
  wholememory_communicator_barrier(comm);
  wholememory_destroy_tensor(table);
  wholememory_finalize();
  return timing;
}

// Forks the ranks of one configuration; returns each rank's timing (empty on failure).
struct RankResult {
  int rank;
  Timing timing;
};

std::vector<Timing> run_config(const Options& options, const Config& config) {
  int id_pipe[2], result_pipe[2];
  if (::pipe(id_pipe) != 0 || ::pipe(result_pipe) != 0) return {};
  const std::string job = "bench-gather-" + std::to_string(::getpid()) + "-" + config.name;
  std::vector<pid_t> children;
  for (int rank = 0; rank < options.ranks; ++rank) {
    const int node = rank * config.nodes / options.ranks;
    int local_rank = 0, local_size = 0;
    for (int r = 0; r < options.ranks; ++r) {
      if (r * config.nodes / options.ranks != node) continue;
      if (r < rank) ++local_rank;
      ++local_size;
    }
    const pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      ::setenv("MEMLOOM_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("MEMLOOM_WORLD_SIZE", std::to_string(options.ranks).c_str(), 1);
      ::setenv("MEMLOOM_LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
      ::setenv("MEMLOOM_LOCAL_SIZE", std::to_string(local_size).c_str(), 1);
      ::setenv("MEMLOOM_NODE", (job + "-node" + std::to_string(node)).c_str(), 1);
      ::setenv("MEMLOOM_JOB_ID", job.c_str(), 1);
      const Timing timing = run_rank(options, config, rank, id_pipe[0], id_pipe[1]);
      const RankResult result{rank, timing};
      const bool sent =
          ::write(result_pipe[1], &result, sizeof(result)) == static_cast<ssize_t>(sizeof(result));
      ::_exit(sent && timing.samples > 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  std::vector<Timing> timings(options.ranks);
  bool complete = static_cast<int>(children.size()) == options.ranks;
  for (size_t i = 0; complete && i < children.size(); ++i) {
    RankResult result{};
    complete = read_exactly(result_pipe[0], &result, sizeof(result), kChildTimeoutMs) &&
               result.rank >= 0 && result.rank < options.ranks &&
               result.timing.samples == options.repeat;
    if (complete) timings[result.rank] = result.timing;
  }
  for (pid_t child : children) {
    if (!complete) ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
  }
  for (int fd : {id_pipe[0], id_pipe[1], result_pipe[0], result_pipe[1]}) ::close(fd);
  return complete ? timings : std::vector<Timing>{};
}

int run_gather(const std::vector<std::string>& args) {
  Options options;
  if (!parse(args, &options)) {
    usage();
    return 2;
  }
  std::vector<Config> configs;
  for (const auto& config : kConfigs) {
    if (options.types.empty() ||
        std::find(options.types.begin(), options.types.end(), config.name) != options.types.end()) {
      configs.push_back(config);
    }
  }
  if (configs.size() != (options.types.empty() ? std::size(kConfigs) : options.types.size())) {
    usage();
    return 2;
  }
  const size_t bytes_per_rank = options.rows * options.row_bytes;
  std::printf("gather: %zu random rows x %zu B per rank from a table of %zu rows, %d ranks\n",
              options.rows, options.row_bytes, options.table_rows, options.ranks);
  std::printf("reference: a single-thread memcpy of %s on rank 0, between the gathers\n",
              memloom::bench::format_bytes(bytes_per_rank).c_str());
  std::printf(
      "ratio: median over %d pairs of (job bytes / job's gather time) / (bytes / memcpy "
      "time), the job's gather time being its slowest rank's\n",
      options.repeat);
  memloom::bench::VerdictTally tally;
  int failures = 0;
  for (const auto& config : configs) {
    const auto timings = run_config(options, config);
    const std::string name = std::string(config.name) + " (" + std::to_string(options.ranks) +
                             " ranks, " + std::to_string(config.nodes) + " node" +
                             (config.nodes > 1 ? "s" : "") + ")";
    if (timings.empty()) {
      std::printf("%-48s FAILED\n", name.c_str());
      ++failures;
      continue;
    }
    // Every rank works at once: the job's time for sample i is its slowest rank's, and its rate
    // all bytes over that time; each is paired with rank 0's memcpy i of one rank's bytes.
    std::vector<double> jobs, copies, ratios, cpu_ratios;
    for (int i = 0; i < options.repeat; ++i) {
      double job = 0, job_cpu = 0;
      for (const auto& timing : timings) {
        job = std::max(job, timing.gather[i]);
        job_cpu += timing.gather_cpu[i];
      }
      jobs.push_back(job);
      copies.push_back(timings[0].memcpy[i]);
      ratios.push_back(timings[0].memcpy[i] * options.ranks / job);
      cpu_ratios.push_back(timings[0].memcpy_cpu[i] * options.ranks / job_cpu);
    }
    const double gather = median(jobs);
    const double job_bytes = static_cast<double>(bytes_per_rank) * options.ranks;
    const double rows_per_second = static_cast<double>(options.rows) * options.ranks / gather;
    std::printf(
        "%-48s %10.2f Mrows/s  %s (median); memcpy %s (median)\n", name.c_str(),
        rows_per_second / 1e6, memloom::bench::format_rate(job_bytes / gather).c_str(),
        memloom::bench::format_rate(static_cast<double>(bytes_per_rank) / median(copies)).c_str());
    tally.add(memloom::bench::report_against("  vs memcpy", job_bytes / gather / 1e9, "GB/s",
                                             median(ratios), "single-thread memcpy (paired)",
                                             target_of(config.type)));
    // CPU time, all threads of all ranks: what the ratio tends to when other users' load leaves
    // the job about as much CPU as the one-thread memcpy gets (bench/RESULTS.md, gather).
    std::printf("  CPU time per byte: memcpy's / the job's = %.2fx (median of the pairs)\n",
                median(cpu_ratios));
  }
  tally.print("gather");
  return failures == 0 ? 0 : 1;
}

}  // namespace

MEMLOOM_REGISTER_BENCH("gather", "WholeMemory gather of random rows, every memory type",
                       run_gather);
