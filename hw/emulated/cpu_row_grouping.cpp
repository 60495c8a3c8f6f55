#include "hw/emulated/cpu_row_grouping.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace memloom::emulated {
namespace {

bool wanted(const kernels::GroupRowsArgs& args, int64_t key) {
  return key >= 0 && key < args.key_limit;
}

// Keys that cover a fair part of [0, key_limit): a counting sort, two passes over the requests
// and one over the key range.
void group_dense(const kernels::GroupRowsArgs& args) {
  std::vector<int64_t> start(static_cast<size_t>(args.key_limit) + 1, 0);
  for (int64_t k = 0; k < args.count; ++k) {
    const int64_t key = args.keys[k];
    if (wanted(args, key)) ++start[static_cast<size_t>(key) + 1];
  }
  int64_t groups = 0;
  for (int64_t key = 0; key < args.key_limit; ++key) {
    const int64_t size = start[static_cast<size_t>(key) + 1];
    if (size > 0) {
      args.rows[groups] = key;
      args.first[groups] = start[static_cast<size_t>(key)];
      ++groups;
    }
    start[static_cast<size_t>(key) + 1] += start[static_cast<size_t>(key)];
  }
  args.first[groups] = start[static_cast<size_t>(args.key_limit)];
  for (int64_t k = 0; k < args.count; ++k) {
    const int64_t key = args.keys[k];
    if (wanted(args, key))
      args.grouped_positions[start[static_cast<size_t>(key)]++] = args.positions[k];
  }
  *args.group_count = static_cast<unsigned long long>(groups);
}

// Few keys over a large range: a stable sort of the wanted requests.
void group_sparse(const kernels::GroupRowsArgs& args) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(args.count));
  for (int64_t k = 0; k < args.count; ++k) {
    if (wanted(args, args.keys[k])) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return args.keys[a] < args.keys[b]; });
  int64_t groups = 0;
  for (size_t at = 0; at < order.size(); ++at) {
    const int64_t key = args.keys[order[at]];
    if (at == 0 || key != args.keys[order[at - 1]]) {
      args.rows[groups] = key;
      args.first[groups] = static_cast<int64_t>(at);
      ++groups;
    }
    args.grouped_positions[at] = args.positions[order[at]];
  }
  args.first[groups] = static_cast<int64_t>(order.size());
  *args.group_count = static_cast<unsigned long long>(groups);
}

}  // namespace

void group_rows_on_cpu(const kernels::GroupRowsArgs& args) {
  if (args.count * 4 >= args.key_limit) {
    group_dense(args);
  } else {
    group_sparse(args);
  }
}

}  // namespace memloom::emulated
