// graph_append_unique and csr_add_self_loop (wholememory/graph_op.h) against host references.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "tests/embedding/graph_test_support.h"
#include "wholememory/graph_op.h"

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

template <typename T>
void check_append_unique(const std::vector<T>& targets, const std::vector<T>& neighbours,
                         wholememory_dtype_t dtype) {
  // Reference: targets, then unseen neighbours in order of first appearance.
  std::vector<T> unique = targets;
  std::unordered_map<T, int32_t> position;
  for (size_t i = 0; i < targets.size(); ++i) position[targets[i]] = static_cast<int32_t>(i);
  std::vector<int32_t> mapping;
  for (T node : neighbours) {
    auto [at, added] = position.emplace(node, static_cast<int32_t>(unique.size()));
    if (added) unique.push_back(node);
    mapping.push_back(at->second);
  }
  DeviceTensor target_tensor(targets, dtype);
  DeviceTensor neighbour_tensor(neighbours, dtype);
  DeviceTensor map_tensor(std::vector<int32_t>(neighbours.size(), -1), WHOLEMEMORY_DT_INT);
  OutputSlot out;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS,
            graph_append_unique(target_tensor.tensor(), neighbour_tensor.tensor(), &out,
                                map_tensor.tensor(), recording_env(), nullptr));
  EXPECT_EQ(dtype, out.dtype);
  EXPECT_EQ(unique, out.values<T>());
  auto got_mapping = map_tensor.download<int32_t>();
  got_mapping.resize(neighbours.size());
  EXPECT_EQ(mapping, got_mapping);
  // Without the mapping output.
  OutputSlot again;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS,
            graph_append_unique(target_tensor.tensor(), neighbour_tensor.tensor(), &again, nullptr,
                                recording_env(), nullptr));
  EXPECT_EQ(unique, again.values<T>());
}

TEST(GraphOps, AppendUniqueMatchesReference) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto) {
    check_append_unique<int32_t>({5, 3, 9}, {3, 7, 7, 1, 5, 9, 2}, WHOLEMEMORY_DT_INT);
    std::mt19937_64 rng(3);
    std::vector<int64_t> targets(500), neighbours(5000);
    for (size_t i = 0; i < targets.size(); ++i)
      targets[i] = static_cast<int64_t>(i * 7919 % 100003);
    for (auto& n : neighbours) n = static_cast<int64_t>(rng() % 4000) * 1000003;
    check_append_unique<int64_t>(targets, neighbours, WHOLEMEMORY_DT_INT64);
    check_append_unique<int64_t>(targets, {}, WHOLEMEMORY_DT_INT64);
    DeviceTensor twice(std::vector<int32_t>{1, 1}, WHOLEMEMORY_DT_INT);
    DeviceTensor other(std::vector<int64_t>{1, 1}, WHOLEMEMORY_DT_INT64);
    OutputSlot out;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, graph_append_unique(twice.tensor(), twice.tensor(), &out,
                                                             nullptr, recording_env(), nullptr))
        << "targets must be distinct";
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, graph_append_unique(twice.tensor(), other.tensor(), &out,
                                                             nullptr, recording_env(), nullptr))
        << "neighbours of another dtype";
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(GraphOps, AddSelfLoopMatchesReference) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto) {
    const Csr graph = random_csr(400, 50, 17);
    const std::vector<int32_t> row_ptr(graph.row_ptr.begin(), graph.row_ptr.end());
    std::vector<int32_t> want_row, want_col;
    for (int64_t r = 0; r < graph.nodes(); ++r) {
      want_row.push_back(static_cast<int32_t>(want_col.size()));
      want_col.push_back(static_cast<int32_t>(r));
      want_col.insert(want_col.end(), graph.col.begin() + row_ptr[r],
                      graph.col.begin() + row_ptr[r + 1]);
    }
    want_row.push_back(static_cast<int32_t>(want_col.size()));
    DeviceTensor rows(row_ptr, WHOLEMEMORY_DT_INT);
    DeviceTensor cols(graph.col, WHOLEMEMORY_DT_INT);
    DeviceTensor out_rows(std::vector<int32_t>(want_row.size(), -1), WHOLEMEMORY_DT_INT);
    DeviceTensor out_cols(std::vector<int32_t>(want_col.size(), -1), WHOLEMEMORY_DT_INT);
    ASSERT_EQ(WHOLEMEMORY_SUCCESS,
              csr_add_self_loop(rows.tensor(), cols.tensor(), out_rows.tensor(), out_cols.tensor(),
                                nullptr));
    EXPECT_EQ(want_row, out_rows.download<int32_t>());
    EXPECT_EQ(want_col, out_cols.download<int32_t>());
    DeviceTensor short_cols(std::vector<int32_t>(want_col.size() - 1, -1), WHOLEMEMORY_DT_INT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              csr_add_self_loop(rows.tensor(), cols.tensor(), out_rows.tensor(),
                                short_cols.tensor(), nullptr));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
