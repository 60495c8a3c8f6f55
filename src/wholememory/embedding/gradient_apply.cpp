// wholememory_embedding_gather_gradient_apply: every rank's (row, gradient) pairs travel to the
// rank owning the row (one key exchange and one row exchange over the embedding's communicator,
// request_round.h), and each owner runs one optimizer step per distinct row it received
// (src/kernels/optimizer_kernel.h) on its own partition, its cache or its state tensors.
//
// Duplicates, as in WholeMemory: the gradients of a row named several times in one call, by one
// rank or by several, are summed and the row takes one step. memloom sums them in a fixed order
// (source rank, then the sender's list order), so the result does not depend on thread timing.
// Only indices cross to the host (to route and group them); rows and gradients stay in memory the
// stream's device reaches, and a host-located table is updated where it is.
#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/embedding/embedding.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/ops/request_round.h"
#include "src/wholememory/ops/row_copy_launch.h"

namespace memloom::wholememory {
namespace {

// The distinct local rows of the received requests, in order of first appearance, and for each
// the positions of its gradients in the received rows.
struct RowGroups {
  std::vector<int64_t> rows;
  std::vector<int64_t> first;  // rows.size() + 1
  std::vector<int64_t> positions;
};

// `keys` are local rows below `local_rows`; a dense table of the rows beats hashing once the
// batch is a fair part of the partition.
RowGroups group_by_row(const std::vector<int64_t>& keys, int64_t local_rows) {
  RowGroups groups;
  std::vector<int64_t> group_of_request(keys.size());
  std::vector<int64_t> sizes;
  auto add = [&](size_t k, int64_t& group) {
    if (group < 0) {
      group = static_cast<int64_t>(groups.rows.size());
      groups.rows.push_back(keys[k]);
      sizes.push_back(0);
    }
    group_of_request[k] = group;
    ++sizes[static_cast<size_t>(group)];
  };
  if (static_cast<int64_t>(keys.size()) * 4 >= local_rows) {
    std::vector<int64_t> group_of_row(static_cast<size_t>(local_rows), -1);
    for (size_t k = 0; k < keys.size(); ++k) add(k, group_of_row[static_cast<size_t>(keys[k])]);
  } else {
    std::unordered_map<int64_t, int64_t> group_of_row;
    group_of_row.reserve(keys.size());
    for (size_t k = 0; k < keys.size(); ++k)
      add(k, group_of_row.try_emplace(keys[k], -1).first->second);
  }
  groups.first.assign(groups.rows.size() + 1, 0);
  for (size_t g = 0; g < sizes.size(); ++g) groups.first[g + 1] = groups.first[g] + sizes[g];
  std::vector<int64_t> next(groups.first.begin(), groups.first.end() - 1);
  groups.positions.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    groups.positions[static_cast<size_t>(next[static_cast<size_t>(group_of_request[k])]++)] =
        static_cast<int64_t>(k);
  }
  return groups;
}

}  // namespace

namespace {

// One rank's requests, routed: keys are rows in the owner's partition; a negative index asks for
// nothing. My own rows stay here (their gradients are read where the caller put them), the others
// travel.
struct Requests {
  LocalArray grads;
  std::vector<int64_t> keys, local_keys;
  std::vector<int> destinations;
  std::vector<int64_t> list_row, local_list_row;  // the grads row of each request
  int64_t first_bad = -1;                         // the first index past the table
};

// `first_bad` of a rank whose operands were refused before it looked at its indices.
constexpr int64_t kRefused = -2;

}  // namespace

void Embedding::apply(wholememory_tensor_t indices_handle, wholememory_tensor_t grads_handle,
                      float lr, wholememory_env_func_t* env, void* stream) {
  std::optional<StreamWork> work_holder;
  Requests requests;
  try {
    MEMLOOM_CHECK_ARG(optimizer_ != nullptr,
                      "the embedding has no optimizer (wholememory_embedding_set_optimizer)");
    const LocalArray indices =
        local_array(indices_handle, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "indices");
    requests.grads = local_array(grads_handle, 2, {WHOLEMEMORY_DT_FLOAT}, "grads");
    const LocalArray& grads = requests.grads;
    MEMLOOM_CHECK_ARG(grads.count == indices.count, "grads has " + std::to_string(grads.count) +
                                                        " rows for " +
                                                        std::to_string(indices.count) + " indices");
    MEMLOOM_CHECK_ARG(grads.columns == dim_, "grads has " + std::to_string(grads.columns) +
                                                 " columns, the embedding " + std::to_string(dim_));
    work_holder.emplace(stream, env);
    const std::vector<int64_t> wanted = read_integers(*work_holder, indices);
    const auto& offsets = table_.offsets;
    for (size_t i = 0; i < wanted.size(); ++i) {
      const int64_t row = wanted[i];
      if (row < 0) continue;
      if (row >= rows_) {
        if (requests.first_bad < 0) requests.first_bad = row;
        continue;
      }
      const auto owner = static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), row) -
                                          offsets.begin() - 1);
      if (owner == rank()) {
        requests.local_keys.push_back(row - offsets[owner]);
        requests.local_list_row.push_back(static_cast<int64_t>(i));
        continue;
      }
      requests.keys.push_back(row - offsets[owner]);
      requests.destinations.push_back(owner);
      requests.list_row.push_back(static_cast<int64_t>(i));
    }
  } catch (...) {
    // The peers are about to wait in the agreement: join it with a refusal, so that they fail
    // now rather than at their deadline.
    try {
      std::lock_guard<std::mutex> lock(comm_->collective_mutex());
      std::vector<int64_t> ignored(comm_->size());
      comm_->group().collectives().allgather(&kRefused, ignored.data(), sizeof(int64_t),
                                             collective_deadline());
    } catch (...) {
      // The refusal failed too; this rank's own error is the one to report.
    }
    throw;
  }
  StreamWork& work = *work_holder;
  const LocalArray& grads = requests.grads;
  const auto& keys = requests.keys;
  const auto& local_keys = requests.local_keys;
  const auto& list_row = requests.list_row;
  const auto& local_list_row = requests.local_list_row;

  std::lock_guard<std::mutex> lock(comm_->collective_mutex());
  auto& collectives = comm_->group().collectives();
  const Deadline deadline = collective_deadline();
  // Every rank learns whether any rank has an index past the table or refused its operands, and
  // they fail together.
  std::vector<int64_t> bad(comm_->size());
  collectives.allgather(&requests.first_bad, bad.data(), sizeof(int64_t), deadline);
  for (int r = 0; r < comm_->size(); ++r) {
    MEMLOOM_CHECK_ARG(bad[r] != kRefused,
                      "rank " + std::to_string(r) + " refused its operands of this gradient apply");
    MEMLOOM_CHECK_ARG(bad[r] < 0, "rank " + std::to_string(r) + " passed index " +
                                      std::to_string(bad[r]) + " to an embedding of " +
                                      std::to_string(rows_) + " rows");
  }
  fill_cache(stream);

  RequestRound round(collectives, keys, requests.destinations, deadline);
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  // My gradients in slot order (grouped by owner), packed.
  std::vector<int64_t> grads_row_of_slot(round.sent_count());
  for (size_t s = 0; s < grads_row_of_slot.size(); ++s) {
    grads_row_of_slot[s] = list_row[static_cast<size_t>(round.request_in_slot()[s])];
  }
  void* outgoing = work.device_buffer(round.sent_count() * row_bytes);
  if (round.sent_count() > 0) {
    kernels::RowTable source{};
    source.base = static_cast<char*>(grads.data);
    source.stride = grads.stride;
    source.dtype = kernels::DType::kFloat;
    const kernels::RowTable packed = packed_table(outgoing, dim_, WHOLEMEMORY_DT_FLOAT);
    IndexList list;
    list.data = work.upload(grads_row_of_slot);
    list.type = kernels::DType::kInt64;
    list.count = static_cast<int64_t>(grads_row_of_slot.size());
    auto* bad_index = work.upload(std::vector<unsigned long long>{0});
    enqueue_row_copy(work.stream(), Direction::kGather, source, packed, list, grads.count, dim_,
                     bad_index);
  }
  void* incoming = work.device_buffer(round.received_count() * row_bytes);
  if (round.sent_count() > 0) work.synchronize();  // the rows are packed
  round.forward(outgoing, incoming, row_bytes, deadline);

  // Every request for my rows in source-rank order (mine at my rank's place), then list order;
  // a position p >= 0 is received row p, p < 0 my grads row -1 - p.
  std::vector<int64_t> request_keys, request_positions;
  request_keys.reserve(round.received_count() + local_keys.size());
  request_positions.reserve(request_keys.capacity());
  const auto& received = round.received();
  size_t next_received = 0;
  for (int source = 0; source < comm_->size(); ++source) {
    if (source == rank()) {
      for (size_t k = 0; k < local_keys.size(); ++k) {
        request_keys.push_back(local_keys[k]);
        request_positions.push_back(-1 - local_list_row[k]);
      }
    }
    for (uint64_t n = 0; n < round.received_per_rank()[source]; ++n, ++next_received) {
      request_keys.push_back(received[next_received]);
      request_positions.push_back(static_cast<int64_t>(next_received));
    }
  }
  RowGroups groups = group_by_row(request_keys, local_rows());
  for (auto& position : groups.positions)
    position = request_positions[static_cast<size_t>(position)];
  if (groups.rows.empty()) return;
  kernels::OptimizerApplyArgs args = optimizer_->kernel_args(lr);
  args.embedding = table_.local_data;
  args.embedding_type = to_op_dtype(dtype_);
  args.embedding_stride = dim_;
  args.cache = has_cache_ ? cache_.local_data : nullptr;
  args.cached_rows = has_cache_ ? cached_rows_[rank()] : 0;
  const auto& specs = optimizer_->states();
  for (size_t i = 0; i < specs.size(); ++i) {
    float* data = reinterpret_cast<float*>(states_[i].local_data);
    if (!specs[i].per_element) {
      args.row_state = data;
    } else if (args.state0 == nullptr) {
      args.state0 = data;
    } else {
      args.state1 = data;
    }
  }
  args.state_stride = dim_;
  args.rows = work.upload(groups.rows);
  args.first = work.upload(groups.first);
  args.positions = work.upload(groups.positions);
  args.grads = static_cast<const float*>(incoming);
  args.grad_stride = dim_;
  args.local_grads = static_cast<const float*>(grads.data);
  args.local_grad_stride = grads.stride;
  args.count = static_cast<int64_t>(groups.rows.size());
  args.columns = dim_;
  // A GPU: one column per thread (neighbouring threads, neighbouring words); a CPU: whole rows.
  args.columns_per_item =
      core::platform().capabilities().lockstep_kernel_threads ? 1 : static_cast<int64_t>(dim_);
  args.items_per_row = (dim_ + args.columns_per_item - 1) / args.columns_per_item;
  args.phase = kernels::OptimizerPhase::kUpdateElements;
  work.launch(hal::KernelId::kOptimizerApply, args,
              static_cast<size_t>(args.count * args.items_per_row));
  if (args.kind == kernels::OptimizerKind::kLazyAdam) {
    args.phase = kernels::OptimizerPhase::kAdvanceRowState;
    work.launch(hal::KernelId::kOptimizerApply, args, static_cast<size_t>(args.count));
  }
  work.synchronize();
}

}  // namespace memloom::wholememory
