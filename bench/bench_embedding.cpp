// memloom-bench embedding: one rank's wholememory_embedding_gather_gradient_apply (lazy Adam)
// over distinct random rows of a FLOAT table, against a single-thread memcpy of the same bytes:
// an apply reads and writes the row and its two states and reads the gradient (7 row sizes per
// row), a memcpy of half that reads and writes as many. Paired samples (bench_timing.h), median
// ratio; the target for the emulated backend is 0.5x.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_ranks.h"
#include "bench/bench_registry.h"
#include "bench/bench_timing.h"
#include "bench/embedding_tensors.h"
#include "bench/reference.h"
#include "memloom/stream.h"
#include "wholememory/embedding.h"

namespace memloom::bench {
namespace {

Figures apply_rank(int64_t rows, int64_t dim, int64_t batch) {
  check_wholememory(wholememory_init(0, LEVEL_WARN), "wholememory_init");
  wholememory_unique_id_t id{};
  check_wholememory(wholememory_create_unique_id(&id), "create_unique_id");
  wholememory_comm_t comm = nullptr;
  check_wholememory(wholememory_create_communicator(&comm, id, 0, 1), "create_communicator");
  wholememory_tensor_description_t desc = packed_description(rows, dim, WHOLEMEMORY_DT_FLOAT);
  wholememory_embedding_t embedding = nullptr;
  check_wholememory(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                                 WHOLEMEMORY_ML_DEVICE, nullptr),
                    "create_embedding");
  wholememory_embedding_optimizer_t adam = nullptr;
  check_wholememory(wholememory_create_embedding_optimizer(&adam, WHOLEMEMORY_OPT_LAZY_ADAM),
                    "optimizer");
  check_wholememory(wholememory_embedding_set_optimizer(embedding, adam), "set_optimizer");
  std::vector<int64_t> indices(static_cast<size_t>(rows));
  std::iota(indices.begin(), indices.end(), 0);
  std::shuffle(indices.begin(), indices.end(), std::mt19937_64(7));
  indices.resize(static_cast<size_t>(batch));
  std::vector<float> grads(static_cast<size_t>(batch * dim), 0.01F);
  wholememory_tensor_t index_tensor =
      pointer_tensor(indices.data(), batch, 0, WHOLEMEMORY_DT_INT64);
  wholememory_tensor_t grad_tensor = pointer_tensor(grads.data(), batch, dim, WHOLEMEMORY_DT_FLOAT);
  const size_t touched = static_cast<size_t>(batch * dim) * sizeof(float) * 7;
  std::vector<char> source(touched / 2, 1), target(touched / 2, 0);
  auto apply = [&] {
    check_wholememory(wholememory_embedding_gather_gradient_apply(
                          embedding, index_tensor, grad_tensor, false, 0.01F, nullptr, 0),
                      "gather_gradient_apply");
  };
  auto copy = [&] { std::memcpy(target.data(), source.data(), source.size()); };
  const PairedTimes times = time_paired(copy, apply, 11, 0.05);
  wholememory_destroy_tensor(index_tensor);
  wholememory_destroy_tensor(grad_tensor);
  check_wholememory(wholememory_destroy_embedding(embedding), "destroy_embedding");
  wholememory_destroy_embedding_optimizer(adam);
  wholememory_finalize();
  return {{"apply", times.seconds},
          {"memcpy", times.reference_seconds},
          {"speedup", times.speedup},
          {"bytes", static_cast<double>(touched)}};
}

int run_embedding(const std::vector<std::string>& args) {
  int64_t rows = 1 << 18, dim = 128, batch = 1 << 17;  // 1 GiB of memory in all
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const long long value = std::atoll(args[i + 1].c_str());
    if (value <= 0) return 2;
    if (args[i] == "--rows") rows = value;
    if (args[i] == "--dim") dim = value;
    if (args[i] == "--batch") batch = value;
  }
  if (batch > rows) batch = rows;
  RankJob job;
  job.ranks = 1;
  const Figures figures =
      run_ranks(job, [&](const RankInfo&) { return apply_rank(rows, dim, batch); });
  const double bytes = figures.at("bytes");
  VerdictTally tally;
  tally.add(report_against("embedding apply (lazy Adam) " + std::to_string(batch) + " of " +
                               std::to_string(rows) + " x " + std::to_string(dim) + " fp32 rows",
                           bytes / figures.at("apply") / 1e9, "GB/s", figures.at("speedup"),
                           "memcpy of the same bytes", 0.5));
  tally.print("embedding");
  return 0;
}

}  // namespace
}  // namespace memloom::bench

MEMLOOM_REGISTER_BENCH("embedding",
                       "sparse optimizer apply (lazy Adam) against memcpy of the same bytes",
                       memloom::bench::run_embedding);
