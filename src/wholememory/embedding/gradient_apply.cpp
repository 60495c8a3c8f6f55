// wholememory_embedding_gather_gradient_apply: every rank's (row, gradient) pairs travel to the
// rank owning the row (one key exchange and one row exchange over the embedding's communicator,
// request_round.h), and each owner runs one optimizer step per distinct row it received
// (src/kernels/optimizer_kernel.h) on its own partition, its cache or its state tensors.
//
// Duplicates, as in WholeMemory: the gradients of a row named several times in one call, by one
// rank or by several, are summed and the row takes one step. memloom sums them in a fixed order
// (source rank, then the sender's list order), so the result does not depend on thread timing.
// Rows are grouped on the stream's device (row_grouping.h: a stable sort by row), so the sum order
// of a row's gradients is that request order on every backend. On a one-rank communicator every
// row is local and the whole call is enqueued without a wait: the optimizer kernel reads the
// group count and the first bad index (if any) where the grouping left them on the device, and
// the host reads those two counters once, after the step, to report a bad index (the step then
// changed nothing). With more ranks the indices cross to the host to be routed. Rows and
// gradients stay in memory the stream's device reaches, and a host-located table is updated where
// it is.
#include <algorithm>
#include <mutex>
#include <optional>

#include "memloom/error.h"
#include "src/wholememory/embedding/embedding.h"
#include "src/wholememory/embedding/row_grouping.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/ops/request_round.h"
#include "src/wholememory/ops/row_copy_launch.h"

namespace memloom::wholememory {
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
  // A one-rank communicator: the requests grouped on the device, and in device memory the list
  // position of the first bad index (~0 for none) and the number of groups.
  DeviceRowGroups device_groups;
  unsigned long long* device_counters = nullptr;
};

// Every row of a one-rank communicator is local: its requests are checked and grouped on the
// device, with nothing read back yet.
void group_local_requests(StreamWork& work, const LocalArray& indices, int64_t rows,
                          Requests& requests) {
  if (indices.count == 0) return;
  auto* counters = work.upload(std::vector<unsigned long long>{~0ULL, 0});  // first bad, groups
  const DeviceRequests device = enqueue_index_requests(work, indices, rows, &counters[0]);
  requests.device_groups = enqueue_row_grouping(work, device, rows, &counters[1]);
  requests.device_counters = counters;
}

// The index at list position `position` of `indices`, read through the stream (waits).
int64_t read_index(StreamWork& work, const LocalArray& indices, uint64_t position) {
  const size_t element = indices.dtype == WHOLEMEMORY_DT_INT64 ? sizeof(int64_t) : sizeof(int32_t);
  const char* at = static_cast<const char*>(indices.data) + position * element;
  if (element == sizeof(int64_t)) {
    int64_t value = 0;
    work.read(&value, at, sizeof(value));
    return value;
  }
  int32_t value = 0;
  work.read(&value, at, sizeof(value));
  return value;
}

// The routing of a communicator of several ranks, on the host: my own rows stay in local_keys,
// the others go to their owners.
void route_requests(StreamWork& work, const LocalArray& indices,
                    const std::vector<int64_t>& offsets, int my_rank, int64_t rows,
                    Requests& requests) {
  const std::vector<int64_t> wanted = read_integers(work, indices);
  for (size_t i = 0; i < wanted.size(); ++i) {
    const int64_t row = wanted[i];
    if (row < 0) continue;
    if (row >= rows) {
      if (requests.first_bad < 0) requests.first_bad = row;
      continue;
    }
    const auto owner = static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), row) -
                                        offsets.begin() - 1);
    if (owner == my_rank) {
      requests.local_keys.push_back(row - offsets[owner]);
      requests.local_list_row.push_back(static_cast<int64_t>(i));
      continue;
    }
    requests.keys.push_back(row - offsets[owner]);
    requests.destinations.push_back(owner);
    requests.list_row.push_back(static_cast<int64_t>(i));
  }
}

// `first_bad` of a rank whose operands were refused before it looked at its indices.
constexpr int64_t kRefused = -2;

}  // namespace

void Embedding::apply(wholememory_tensor_t indices_handle, wholememory_tensor_t grads_handle,
                      float lr, wholememory_env_func_t* env, void* stream) {
  std::optional<StreamWork> work_holder;
  Requests requests;
  LocalArray indices;
  try {
    MEMLOOM_CHECK_ARG(optimizer_ != nullptr,
                      "the embedding has no optimizer (wholememory_embedding_set_optimizer)");
    indices = local_array(indices_handle, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "indices");
    requests.grads = local_array(grads_handle, 2, {WHOLEMEMORY_DT_FLOAT}, "grads");
    const LocalArray& grads = requests.grads;
    MEMLOOM_CHECK_ARG(grads.count == indices.count, "grads has " + std::to_string(grads.count) +
                                                        " rows for " +
                                                        std::to_string(indices.count) + " indices");
    MEMLOOM_CHECK_ARG(grads.columns == dim_, "grads has " + std::to_string(grads.columns) +
                                                 " columns, the embedding " + std::to_string(dim_));
    work_holder.emplace(stream, env);
    if (comm_->size() == 1) {
      group_local_requests(*work_holder, indices, rows_, requests);
    } else {
      route_requests(*work_holder, indices, table_.offsets, rank(), rows_, requests);
    }
  } catch (...) {
    // The peers are about to wait in the agreement: join it with a refusal, so that they fail
    // now rather than at their deadline. A lone rank has no peer to tell.
    if (comm_->size() == 1) throw;
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
  if (comm_->size() == 1) {
    // Nothing to agree on with peers: the step is enqueued behind the grouping, and the counters
    // are read once it has run (the call's one wait). The lock keeps the cache's filling and the
    // steps of concurrent calls in order, as on more ranks.
    std::lock_guard<std::mutex> lock(comm_->collective_mutex());
    fill_cache(stream);
    if (requests.device_counters == nullptr) return;  // no indices
    enqueue_step(work, requests.device_groups, indices.count, nullptr, grads,
                 requests.device_counters, lr);
    unsigned long long read_back[2] = {0, 0};
    work.read(read_back, requests.device_counters, sizeof(read_back));
    if (read_back[0] == ~0ULL) return;
    const int64_t bad = read_index(work, indices, read_back[0]);
    raise(Status::kInvalidInput, "rank " + std::to_string(rank()) + " passed index " +
                                     std::to_string(bad) + " to an embedding of " +
                                     std::to_string(rows_) + " rows");
  }
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

  DeviceRowGroups groups;
  int64_t groups_count = 0;
  const void* incoming = nullptr;
  {
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
    void* receive = work.device_buffer(round.received_count() * row_bytes);
    incoming = receive;
    if (round.sent_count() > 0) work.synchronize();  // the rows are packed
    round.forward(outgoing, receive, row_bytes, deadline);

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
    if (!request_keys.empty()) {
      DeviceRequests device;
      device.keys = work.upload(request_keys);
      device.positions = work.upload(request_positions);
      device.count = static_cast<int64_t>(request_keys.size());
      auto* group_count = work.upload(std::vector<unsigned long long>{0});
      groups = enqueue_row_grouping(work, device, local_rows(), group_count);
      unsigned long long read_back = 0;
      work.read(&read_back, group_count, sizeof(read_back));
      groups_count = static_cast<int64_t>(read_back);
    }
  }
  if (groups_count == 0) return;
  enqueue_step(work, groups, groups_count, incoming, grads, nullptr, lr);
  work.synchronize();
}

void Embedding::enqueue_step(StreamWork& work, const DeviceRowGroups& groups, int64_t count,
                             const void* incoming, const LocalArray& grads,
                             const unsigned long long* counters, float lr) {
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
  args.rows = groups.rows;
  args.first = groups.first;
  args.positions = groups.positions;
  args.grads = static_cast<const float*>(incoming);
  args.grad_stride = dim_;
  args.local_grads = static_cast<const float*>(grads.data);
  args.local_grad_stride = grads.stride;
  args.count = count;
  args.columns = dim_;
  if (counters != nullptr) {
    args.first_bad = &counters[0];
    args.group_count = &counters[1];
  }
  // Whole rows per item, and lazy Adam's row state advanced in the same launch: a CPU thread
  // takes rows, and the CUDA backend's warp-per-row kernel reads neither field.
  args.columns_per_item = dim_;
  args.items_per_row = 1;
  args.phase = args.kind == kernels::OptimizerKind::kLazyAdam
                   ? kernels::OptimizerPhase::kUpdateAndAdvance
                   : kernels::OptimizerPhase::kUpdateElements;
  work.launch(hal::KernelId::kOptimizerApply, args, static_cast<size_t>(args.count));
}

}  // namespace memloom::wholememory
