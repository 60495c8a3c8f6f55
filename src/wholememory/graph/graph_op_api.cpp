// The graph operation C API (wholememory/graph_op.h). csr_add_self_loop is one kernel
// (src/kernels/sampling_kernel.h: SelfLoopKernel). graph_append_unique keeps first-appearance
// order, which is sequential by nature: it reads the node lists back and runs on the host
// (memory of the lists' size only), then writes its outputs on the stream.
#include <optional>
#include <unordered_map>

#include "memloom/error.h"
#include "src/kernels/sampling_kernel.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/graph_op.h"

namespace wm = memloom::wholememory;
using memloom::raise;
using memloom::Status;

extern "C" {

wholememory_error_code_t graph_append_unique(
    wholememory_tensor_t target_nodes_tensor, wholememory_tensor_t neighbor_nodes_tensor,
    void* output_unique_node_memory_context,
    wholememory_tensor_t output_neighbor_raw_to_unique_mapping_tensor,
    wholememory_env_func_t* p_env_fns, void* stream) {
  return wm::guarded("graph_append_unique", [&] {
    const auto targets = wm::local_array(
        target_nodes_tensor, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "target_nodes_tensor");
    const auto neighbours = wm::local_array(neighbor_nodes_tensor, 1, {targets.dtype},
                                            "neighbor_nodes_tensor (the targets' dtype)");
    MEMLOOM_CHECK_ARG(output_unique_node_memory_context != nullptr,
                      "output_unique_node_memory_context is null");
    std::optional<wm::LocalArray> mapping;
    if (output_neighbor_raw_to_unique_mapping_tensor != nullptr) {
      mapping =
          wm::local_array(output_neighbor_raw_to_unique_mapping_tensor, 1, {WHOLEMEMORY_DT_INT},
                          "output_neighbor_raw_to_unique_mapping_tensor");
      MEMLOOM_CHECK_ARG(mapping->count == neighbours.count,
                        "the mapping needs one entry per neighbour");
    }
    wm::StreamWork work(stream, p_env_fns);
    const auto target_ids = wm::read_integers(work, targets);
    const auto neighbour_ids = wm::read_integers(work, neighbours);
    std::unordered_map<int64_t, int32_t> position;
    position.reserve(target_ids.size() + neighbour_ids.size());
    std::vector<int64_t> unique;
    for (const int64_t node : target_ids) {
      const bool added = position.emplace(node, static_cast<int32_t>(unique.size())).second;
      MEMLOOM_CHECK_ARG(added, "target_nodes_tensor names node " + std::to_string(node) +
                                   " twice (targets must be distinct)");
      unique.push_back(node);
    }
    std::vector<int32_t> map(neighbour_ids.size());
    for (size_t i = 0; i < neighbour_ids.size(); ++i) {
      const auto [at, added] =
          position.emplace(neighbour_ids[i], static_cast<int32_t>(unique.size()));
      if (added) unique.push_back(neighbour_ids[i]);
      map[i] = at->second;
    }
    auto* env = work.env();
    void* out =
        wm::output_malloc(env, output_unique_node_memory_context,
                          static_cast<int64_t>(unique.size()), targets.dtype, "the unique nodes");
    if (targets.dtype == WHOLEMEMORY_DT_INT64) {
      work.stream().copy(out, work.upload(unique), unique.size() * sizeof(int64_t));
    } else {
      const std::vector<int32_t> narrow(unique.begin(), unique.end());
      work.stream().copy(out, work.upload(narrow), narrow.size() * sizeof(int32_t));
    }
    if (mapping) work.stream().copy(mapping->data, work.upload(map), map.size() * sizeof(int32_t));
    work.synchronize();
  });
}

wholememory_error_code_t csr_add_self_loop(wholememory_tensor_t csr_row_ptr_tensor,
                                           wholememory_tensor_t csr_col_ptr_tensor,
                                           wholememory_tensor_t output_csr_row_ptr_tensor,
                                           wholememory_tensor_t output_csr_col_ptr_tensor,
                                           void* stream) {
  return wm::guarded("csr_add_self_loop", [&] {
    const auto row_ptr =
        wm::local_array(csr_row_ptr_tensor, 1, {WHOLEMEMORY_DT_INT}, "csr_row_ptr_tensor");
    const auto col =
        wm::local_array(csr_col_ptr_tensor, 1, {WHOLEMEMORY_DT_INT}, "csr_col_ptr_tensor");
    const auto out_row = wm::local_array(output_csr_row_ptr_tensor, 1, {WHOLEMEMORY_DT_INT},
                                         "output_csr_row_ptr_tensor");
    const auto out_col = wm::local_array(output_csr_col_ptr_tensor, 1, {WHOLEMEMORY_DT_INT},
                                         "output_csr_col_ptr_tensor");
    MEMLOOM_CHECK_ARG(row_ptr.count >= 1, "csr_row_ptr_tensor needs rows + 1 entries");
    const int64_t rows = row_ptr.count - 1;
    MEMLOOM_CHECK_ARG(
        out_row.count == row_ptr.count,
        "output_csr_row_ptr_tensor needs " + std::to_string(row_ptr.count) + " entries");
    MEMLOOM_CHECK_ARG(out_col.count == col.count + rows, "output_csr_col_ptr_tensor needs " +
                                                             std::to_string(col.count + rows) +
                                                             " entries (edges + rows)");
    wm::StreamWork work(stream, nullptr);
    memloom::kernels::SelfLoopArgs args{};
    args.row_ptr = static_cast<const int32_t*>(row_ptr.data);
    args.col = static_cast<const int32_t*>(col.data);
    args.out_row_ptr = static_cast<int32_t*>(out_row.data);
    args.out_col = static_cast<int32_t*>(out_col.data);
    args.rows = rows;
    work.launch(memloom::hal::KernelId::kAddSelfLoop, args, static_cast<size_t>(rows + 1));
    work.synchronize();
  });
}

}  // extern "C"
