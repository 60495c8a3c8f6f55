// Neighbour sampling without replacement (wholememory/wholegraph_op.h): every sample is a real
// neighbour, no centre gets one twice, each centre gets min(fanout, degree); weighted sampling
// follows the weights and unweighted sampling is uniform (chi-square over many seeds); a seed gives
// the same samples per centre in any batch, on graphs in host, device, CONTINUOUS and CHUNKED
// memory over 1 to 3 ranks, and equal to a recorded digest, so that a GPU run reproduces it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "tests/embedding/graph_test_support.h"
#include "wholememory/wholegraph_op.h"

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

struct Samples {
  std::vector<int32_t> offsets;
  std::vector<int32_t> nodes;
  std::vector<int32_t> centres;
  std::vector<int64_t> edges;
};

Samples sample(wholememory_tensor_t row_ptr, wholememory_tensor_t col, wholememory_tensor_t weight,
               const std::vector<int64_t>& centres, int fanout, unsigned long long seed) {
  DeviceTensor centre_list(centres, WHOLEMEMORY_DT_INT64);
  DeviceTensor offsets(std::vector<int32_t>(centres.size() + 1, -1), WHOLEMEMORY_DT_INT);
  OutputSlot nodes, centre_ids, edges;
  const auto code = weight == nullptr
                        ? wholegraph_csr_unweighted_sample_without_replacement(
                              row_ptr, col, centre_list.tensor(), fanout, offsets.tensor(), &nodes,
                              &centre_ids, &edges, seed, recording_env(), nullptr)
                        : wholegraph_csr_weighted_sample_without_replacement(
                              row_ptr, col, weight, centre_list.tensor(), fanout, offsets.tensor(),
                              &nodes, &centre_ids, &edges, seed, recording_env(), nullptr);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, code);
  Samples out;
  out.offsets = offsets.download<int32_t>();
  out.offsets.resize(centres.size() + 1);
  out.nodes = nodes.values<int32_t>();
  out.centres = centre_ids.values<int32_t>();
  out.edges = edges.values<int64_t>();
  return out;
}

void check_samples(const Csr& graph, const std::vector<int64_t>& centres, int fanout,
                   const Samples& samples) {
  ASSERT_EQ(0, samples.offsets[0]);
  for (size_t i = 0; i < centres.size(); ++i) {
    const int64_t centre = centres[i];
    const int64_t degree = graph.row_ptr[centre + 1] - graph.row_ptr[centre];
    const int64_t count = samples.offsets[i + 1] - samples.offsets[i];
    ASSERT_EQ(fanout <= 0 ? degree : std::min<int64_t>(fanout, degree), count)
        << "centre " << centre;
    std::set<int32_t> seen;
    for (int64_t k = samples.offsets[i]; k < samples.offsets[i + 1]; ++k) {
      const int64_t edge = samples.edges[k];
      ASSERT_GE(edge, graph.row_ptr[centre]) << "centre " << centre;
      ASSERT_LT(edge, graph.row_ptr[centre + 1]) << "centre " << centre;
      ASSERT_EQ(graph.col[edge], samples.nodes[k]);
      ASSERT_EQ(static_cast<int32_t>(i), samples.centres[k]);
      ASSERT_TRUE(seen.insert(samples.nodes[k]).second)
          << "centre " << centre << " got node " << samples.nodes[k] << " twice";
    }
  }
}

// Each centre's sampled edges, for comparing runs.
std::map<int64_t, std::vector<int64_t>> by_centre(const std::vector<int64_t>& centres,
                                                  const Samples& samples) {
  std::map<int64_t, std::vector<int64_t>> out;
  for (size_t i = 0; i < centres.size(); ++i) {
    out[centres[i]].assign(samples.edges.begin() + samples.offsets[i],
                           samples.edges.begin() + samples.offsets[i + 1]);
  }
  return out;
}

uint64_t digest(const std::map<int64_t, std::vector<int64_t>>& samples) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over (centre, edges...)
  for (const auto& [centre, edges] : samples) {
    for (int64_t value : edges) {
      hash = (hash ^ static_cast<uint64_t>(value + 7 * centre)) * 1099511628211ull;
    }
  }
  return hash;
}

struct PointerGraph {
  explicit PointerGraph(const Csr& graph)
      : row_ptr(graph.row_ptr, WHOLEMEMORY_DT_INT64),
        col(graph.col, WHOLEMEMORY_DT_INT),
        weight(graph.weight, WHOLEMEMORY_DT_FLOAT) {}
  DeviceTensor row_ptr, col, weight;
};

std::vector<int64_t> all_nodes(const Csr& graph) {
  std::vector<int64_t> nodes(static_cast<size_t>(graph.nodes()));
  for (int64_t n = 0; n < graph.nodes(); ++n) nodes[n] = n;
  return nodes;
}

TEST(Sampling, PropertiesHoldForBothSamplersAndManyFanouts) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto) {
    const Csr graph = random_csr(300, 80, 5);
    PointerGraph tensors(graph);
    const auto centres = all_nodes(graph);
    for (const int fanout : {1, 3, 10, 30, 79, 80, 200, -1}) {
      SCOPED_TRACE("fanout " + std::to_string(fanout));
      check_samples(
          graph, centres, fanout,
          sample(tensors.row_ptr.tensor(), tensors.col.tensor(), nullptr, centres, fanout, 42));
      check_samples(graph, centres, fanout,
                    sample(tensors.row_ptr.tensor(), tensors.col.tensor(), tensors.weight.tensor(),
                           centres, fanout, 42));
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Chi-square with a bound of the 0.001 tail: a correct sampler fails one run in a thousand.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double sum = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    sum += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return sum;
}

TEST(Sampling, WeightedFollowsTheWeightsAndUnweightedIsUniform) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto) {
    // kCopies copies of three nodes, each copy a centre of its own (the generator is keyed by the
    // centre, so the copies draw independently in one call): four neighbours of weights 1, 2, 3,
    // 4 (fanout 1); ten of weight 1 (unweighted, fanout 3); weights 0, 0, 5 (fanout 1: a zero
    // weight is never taken over a positive one).
    constexpr int kCopies = 4000;
    const std::vector<float> weights = {1, 2, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 5};
    const std::vector<int64_t> degrees = {4, 10, 3};
    Csr graph;
    graph.row_ptr = {0};
    std::vector<int64_t> first_kind, second_kind, third_kind;
    for (int copy = 0; copy < kCopies; ++copy) {
      size_t w = 0;
      for (size_t kind = 0; kind < degrees.size(); ++kind) {
        (kind == 0 ? first_kind : kind == 1 ? second_kind : third_kind).push_back(graph.nodes());
        for (int64_t k = 0; k < degrees[kind]; ++k) {
          graph.col.push_back(static_cast<int32_t>(k));
          graph.weight.push_back(weights[w++]);
        }
        graph.row_ptr.push_back(static_cast<int64_t>(graph.col.size()));
      }
    }
    PointerGraph tensors(graph);
    std::vector<double> weighted(4, 0), uniform(10, 0);
    const auto one = sample(tensors.row_ptr.tensor(), tensors.col.tensor(), tensors.weight.tensor(),
                            first_kind, 1, 99);
    ASSERT_EQ(static_cast<size_t>(kCopies), one.nodes.size());
    for (int32_t node : one.nodes) weighted[node] += 1;
    const auto zero = sample(tensors.row_ptr.tensor(), tensors.col.tensor(),
                             tensors.weight.tensor(), third_kind, 1, 99);
    for (int32_t node : zero.nodes) ASSERT_EQ(2, node) << "a zero weight was preferred";
    const auto three =
        sample(tensors.row_ptr.tensor(), tensors.col.tensor(), nullptr, second_kind, 3, 99);
    ASSERT_EQ(static_cast<size_t>(3 * kCopies), three.nodes.size());
    for (int32_t node : three.nodes) uniform[node] += 1;
    EXPECT_LT(chi_square(weighted, {400, 800, 1200, 1600}), 16.27) << "3 degrees of freedom";
    EXPECT_LT(chi_square(uniform, std::vector<double>(10, kCopies * 3 / 10.0)), 27.88)
        << "9 degrees of freedom";
    // A sampler that ignored the weights would be far off: uniform counts give 400 here.
    EXPECT_GT(chi_square({1000, 1000, 1000, 1000}, {400, 800, 1200, 1600}), 16.27);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// A CSR in WholeMemory over comm, rank 0 writing it; then a barrier.
template <typename T>
wholememory_tensor_t wholememory_array(const std::vector<T>& values, wholememory_dtype_t dtype,
                                       wholememory_comm_t comm, wholememory_memory_type_t type,
                                       wholememory_memory_location_t location, int rank) {
  auto desc = opstest::array_desc(static_cast<int64_t>(values.size()), 0, dtype);
  wholememory_tensor_t tensor = nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_create_tensor(&tensor, &desc, comm, type, location));
  if (rank == 0) {
    std::vector<int64_t> every(values.size());
    for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<int64_t>(i);
    DeviceTensor list(every, WHOLEMEMORY_DT_INT64);
    DeviceTensor input(values, dtype);
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_scatter(input.tensor(), list.tensor(), tensor, nullptr, nullptr, -1));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(nullptr));
  }
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_communicator_barrier(comm));
  return tensor;
}

// Recorded on the emulated backend; the CUDA run of this binary must give the same.
constexpr uint64_t kUnweightedDigest = 14244132865180616410ull;
constexpr uint64_t kWeightedDigest = 5858158307815661628ull;

TEST(Sampling, SameSeedSameSamplesInAnyBatchMemoryAndRankCount) {
  for (const int ranks : {1, 3}) {
    auto results = run_with_comm(ranks_on_nodes(ranks, 1), [](const auto& context, auto comm) {
      const Csr graph = random_csr(500, 100, 11);
      PointerGraph pointers(graph);
      const auto centres = all_nodes(graph);
      const auto unweighted = by_centre(
          centres,
          sample(pointers.row_ptr.tensor(), pointers.col.tensor(), nullptr, centres, 25, 9));
      const auto weighted =
          by_centre(centres, sample(pointers.row_ptr.tensor(), pointers.col.tensor(),
                                    pointers.weight.tensor(), centres, 25, 9));
      if (kUnweightedDigest != 0) {
        EXPECT_EQ(kUnweightedDigest, digest(unweighted));
      }
      if (kWeightedDigest != 0) {
        EXPECT_EQ(kWeightedDigest, digest(weighted));
      }
      if (context.rank == 0) {
        std::printf("sampling digests: unweighted %llu weighted %llu\n",
                    static_cast<unsigned long long>(digest(unweighted)),
                    static_cast<unsigned long long>(digest(weighted)));
      }
      // My share of the centres, in reverse order, sampled from graphs in WholeMemory.
      std::vector<int64_t> mine;
      for (int64_t n = graph.nodes() - 1 - context.rank; n >= 0; n -= context.world_size) {
        mine.push_back(n);
      }
      for (const auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
        for (const auto location : {WHOLEMEMORY_ML_HOST, WHOLEMEMORY_ML_DEVICE}) {
          SCOPED_TRACE("type " + std::to_string(type) + " location " + std::to_string(location));
          auto* row_ptr = wholememory_array(graph.row_ptr, WHOLEMEMORY_DT_INT64, comm, type,
                                            location, context.rank);
          auto* col =
              wholememory_array(graph.col, WHOLEMEMORY_DT_INT, comm, type, location, context.rank);
          auto* weight = wholememory_array(graph.weight, WHOLEMEMORY_DT_FLOAT, comm, type, location,
                                           context.rank);
          const auto plain = sample(row_ptr, col, nullptr, mine, 25, 9);
          check_samples(graph, mine, 25, plain);
          for (const auto& [centre, edges] : by_centre(mine, plain)) {
            ASSERT_EQ(unweighted.at(centre), edges) << "centre " << centre;
          }
          for (const auto& [centre, edges] :
               by_centre(mine, sample(row_ptr, col, weight, mine, 25, 9))) {
            ASSERT_EQ(weighted.at(centre), edges) << "centre " << centre;
          }
          EMB_EXPECT_OK(wholememory_destroy_tensor(row_ptr));
          EMB_EXPECT_OK(wholememory_destroy_tensor(col));
          EMB_EXPECT_OK(wholememory_destroy_tensor(weight));
        }
      }
    });
    EXPECT_ALL_RANKS_PASS(results);
  }
}

TEST(Sampling, BadInput) {
  auto results = run_with_comm(ranks_on_nodes(2, 2), [](const auto&, auto comm) {
    const Csr graph = random_csr(20, 5, 3);
    PointerGraph tensors(graph);
    DeviceTensor centres(std::vector<int64_t>{3, 20}, WHOLEMEMORY_DT_INT64);
    DeviceTensor offsets(std::vector<int32_t>(3, 0), WHOLEMEMORY_DT_INT);
    DeviceTensor short_offsets(std::vector<int32_t>(2, 0), WHOLEMEMORY_DT_INT);
    OutputSlot nodes;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholegraph_csr_unweighted_sample_without_replacement(
                  tensors.row_ptr.tensor(), tensors.col.tensor(), centres.tensor(), 3,
                  offsets.tensor(), &nodes, nullptr, nullptr, 1, recording_env(), nullptr))
        << "centre 20 is past the graph";
    DeviceTensor good(std::vector<int64_t>{3, 4}, WHOLEMEMORY_DT_INT64);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholegraph_csr_unweighted_sample_without_replacement(
                  tensors.row_ptr.tensor(), tensors.col.tensor(), good.tensor(), 3,
                  short_offsets.tensor(), &nodes, nullptr, nullptr, 1, recording_env(), nullptr));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholegraph_csr_unweighted_sample_without_replacement(
                  tensors.row_ptr.tensor(), tensors.col.tensor(), good.tensor(), 3,
                  offsets.tensor(), nullptr, nullptr, nullptr, 1, recording_env(), nullptr));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholegraph_csr_weighted_sample_without_replacement(
                  tensors.row_ptr.tensor(), tensors.col.tensor(), nullptr, good.tensor(), 3,
                  offsets.tensor(), &nodes, nullptr, nullptr, 1, recording_env(), nullptr));
    // A DISTRIBUTED graph over two nodes is not mapped here.
    auto desc = opstest::array_desc(21, 0, WHOLEMEMORY_DT_INT64);
    wholememory_tensor_t distributed = nullptr;
    EMB_ASSERT_OK(wholememory_create_tensor(&distributed, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                            WHOLEMEMORY_ML_HOST));
    EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED,
              wholegraph_csr_unweighted_sample_without_replacement(
                  distributed, tensors.col.tensor(), good.tensor(), 3, offsets.tensor(), &nodes,
                  nullptr, nullptr, 1, recording_env(), nullptr));
    EMB_EXPECT_OK(wholememory_destroy_tensor(distributed));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(Sampling, RandomHelpers) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto) {
    std::vector<int64_t> wide(1000);
    std::vector<int32_t> narrow(1000);
    std::vector<float> exponential(20000);
    wholememory_tensor_t wide_tensor = nullptr, narrow_tensor = nullptr, exp_tensor = nullptr;
    auto wide_desc = opstest::array_desc(1000, 0, WHOLEMEMORY_DT_INT64);
    auto narrow_desc = opstest::array_desc(1000, 0, WHOLEMEMORY_DT_INT);
    auto exp_desc = opstest::array_desc(20000, 0, WHOLEMEMORY_DT_FLOAT);
    EMB_ASSERT_OK(wholememory_make_tensor_from_pointer(&wide_tensor, wide.data(), &wide_desc));
    EMB_ASSERT_OK(
        wholememory_make_tensor_from_pointer(&narrow_tensor, narrow.data(), &narrow_desc));
    EMB_ASSERT_OK(wholememory_make_tensor_from_pointer(&exp_tensor, exponential.data(), &exp_desc));
    EMB_ASSERT_OK(generate_random_positive_int_cpu(5, 1, wide_tensor));
    const auto first = wide;
    EMB_ASSERT_OK(generate_random_positive_int_cpu(5, 1, wide_tensor));
    EXPECT_EQ(first, wide) << "same seed and subsequence, same values";
    EMB_ASSERT_OK(generate_random_positive_int_cpu(5, 2, wide_tensor));
    EXPECT_NE(first, wide);
    EMB_ASSERT_OK(generate_random_positive_int_cpu(5, 1, narrow_tensor));
    EXPECT_TRUE(std::all_of(wide.begin(), wide.end(), [](int64_t v) { return v >= 0; }));
    EXPECT_TRUE(std::all_of(narrow.begin(), narrow.end(), [](int32_t v) { return v >= 0; }));
    EXPECT_EQ(1000u, std::set<int64_t>(wide.begin(), wide.end()).size());
    EMB_ASSERT_OK(generate_exponential_distribution_negative_float_cpu(3, 0, exp_tensor));
    double sum = 0;
    for (float v : exponential) {
      ASSERT_LE(v, 0.0F);
      sum += v;
    }
    EXPECT_NEAR(-1.0, sum / exponential.size(), 0.03) << "an exponential of rate 1 has mean 1";
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              generate_exponential_distribution_negative_float_cpu(3, 0, wide_tensor));
    for (auto* tensor : {wide_tensor, narrow_tensor, exp_tensor}) {
      EMB_EXPECT_OK(wholememory_destroy_tensor(tensor));
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
