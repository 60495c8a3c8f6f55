#include "src/wholememory/embedding/embedding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "memloom/error.h"
#include "src/wholememory/embedding/api_codes.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/runtime.h"
#include "wholememory/wholememory_op.h"

namespace memloom::wholememory {
namespace {

std::vector<int64_t> entry_offsets(wholememory_tensor_t tensor, int world_size) {
  std::vector<size_t> offsets(static_cast<size_t>(world_size) + 1);
  check_code(wholememory_tensor_get_entry_offsets(offsets.data(), tensor),
             "wholememory_tensor_get_entry_offsets");
  return std::vector<int64_t>(offsets.begin(), offsets.end());
}

// A 1-D INT64 tensor over device-readable memory.
struct IndexTensor {
  IndexTensor(void* data, int64_t count) {
    wholememory_tensor_description_t desc = array_description(count, WHOLEMEMORY_DT_INT64);
    check_code(wholememory_make_tensor_from_pointer(&tensor, data, &desc),
               "wholememory_make_tensor_from_pointer");
  }
  ~IndexTensor() { (void)wholememory_destroy_tensor(tensor); }
  IndexTensor(const IndexTensor&) = delete;
  IndexTensor& operator=(const IndexTensor&) = delete;
  wholememory_tensor_t tensor = nullptr;
};

}  // namespace

void fill_floats(void* stream, void* destination, size_t count, float value) {
  if (count == 0) return;
  StreamWork work(stream, nullptr);
  const std::vector<float> pattern(std::min<size_t>(count, 1 << 18), value);
  for (size_t done = 0; done < count; done += pattern.size()) {
    const size_t now = std::min(pattern.size(), count - done);
    work.stream().copy(static_cast<float*>(destination) + done, pattern.data(),
                       now * sizeof(float));
  }
  work.synchronize();
}

Embedding::Embedding(const wholememory_tensor_description_t& desc, wholememory_comm_t comm,
                     wholememory_memory_type_t type, wholememory_memory_location_t location,
                     const CachePolicy* cache, const size_t* entry_partition)
    : comm_handle_(comm), comm_(Runtime::instance().comm(comm)), type_(type), location_(location) {
  MEMLOOM_CHECK_ARG(
      desc.dim == 2,
      "an embedding is a matrix: embedding_tensor_description has dim " + std::to_string(desc.dim));
  MEMLOOM_CHECK_ARG(desc.dtype == WHOLEMEMORY_DT_FLOAT || desc.dtype == WHOLEMEMORY_DT_HALF ||
                        desc.dtype == WHOLEMEMORY_DT_BF16,
                    "embedding dtype must be FLOAT, HALF or BF16, got " +
                        std::to_string(static_cast<int>(desc.dtype)));
  MEMLOOM_CHECK_ARG(desc.sizes[0] > 0 && desc.sizes[1] > 0,
                    "an embedding needs at least one row and one column");
  rows_ = desc.sizes[0];
  dim_ = desc.sizes[1];
  dtype_ = desc.dtype;
  std::vector<size_t> partition;
  if (entry_partition != nullptr) {
    partition.assign(entry_partition, entry_partition + comm_->size());
    size_t total = 0;
    for (size_t rows : partition) total += rows;
    MEMLOOM_CHECK_ARG(total == static_cast<size_t>(rows_), "embedding_entry_partition sums to " +
                                                               std::to_string(total) +
                                                               " rows, the "
                                                               "embedding has " +
                                                               std::to_string(rows_));
  }
  table_ = create_partitioned(dim_, dtype_, type, location, partition);
  if (cache == nullptr) return;
  MEMLOOM_CHECK_ARG(cache->comm == comm, "memloom caches at the embedding's communicator only");
  if (cache->access != WHOLEMEMORY_AT_READWRITE) {
    destroy();
    raise(Status::kNotImplemented, "memloom's embedding cache is READWRITE only");
  }
  cached_rows_.resize(comm_->size());
  std::vector<size_t> cache_partition(comm_->size());
  size_t total = 0;
  for (int r = 0; r < comm_->size(); ++r) {
    const int64_t local = table_.offsets[r + 1] - table_.offsets[r];
    cached_rows_[r] = std::min<int64_t>(
        local, static_cast<int64_t>(std::ceil(static_cast<double>(cache->ratio) * local)));
    cache_partition[r] = static_cast<size_t>(cached_rows_[r]);
    total += cache_partition[r];
  }
  if (total == 0) return;  // a ratio of 0: every row stays in the table
  try {
    cache_ = create_partitioned(dim_, dtype_, cache->type, cache->location, cache_partition);
  } catch (...) {
    destroy();
    throw;
  }
  has_cache_ = true;
}

PartitionedTensor Embedding::create_partitioned(int64_t columns, wholememory_dtype_t dtype,
                                                wholememory_memory_type_t type,
                                                wholememory_memory_location_t location,
                                                const std::vector<size_t>& partition) {
  size_t total = 0;
  for (size_t rows : partition) total += rows;
  wholememory_tensor_description_t desc =
      matrix_description(partition.empty() ? rows_ : static_cast<int64_t>(total), columns, dtype);
  std::vector<size_t> plan = partition;
  PartitionedTensor result;
  check_code(wholememory_create_tensor(&result.tensor, &desc, comm_handle_, type, location,
                                       plan.empty() ? nullptr : plan.data()),
             "wholememory_create_tensor");
  try {
    check_code(wholememory_tensor_map_local_tensor(result.tensor, &result.local),
               "wholememory_tensor_map_local_tensor");
    result.local_data = static_cast<char*>(wholememory_tensor_get_data_pointer(result.local));
    result.offsets = entry_offsets(result.tensor, comm_->size());
  } catch (...) {
    if (result.local != nullptr) (void)wholememory_destroy_tensor(result.local);
    (void)wholememory_destroy_tensor(result.tensor);
    throw;
  }
  return result;
}

void Embedding::destroy() {
  // Every tensor is destroyed (collectively) even when one fails; the first failure is reported.
  wholememory_error_code_t first = WHOLEMEMORY_SUCCESS;
  auto release = [&](PartitionedTensor& tensor) {
    if (tensor.local != nullptr) (void)wholememory_destroy_tensor(tensor.local);
    if (tensor.tensor != nullptr) {
      const auto code = wholememory_destroy_tensor(tensor.tensor);
      if (first == WHOLEMEMORY_SUCCESS) first = code;
    }
    tensor = PartitionedTensor{};
  };
  for (auto& state : states_) release(state);
  states_.clear();
  release(cache_);
  release(table_);
  check_code(first, "wholememory_destroy_tensor");
}

void Embedding::set_optimizer(std::shared_ptr<Optimizer> optimizer) {
  MEMLOOM_CHECK_ARG(optimizer_ == nullptr, "the embedding already has an optimizer");
  std::vector<size_t> partition(comm_->size());
  for (int r = 0; r < comm_->size(); ++r) {
    partition[r] = static_cast<size_t>(table_.offsets[r + 1] - table_.offsets[r]);
  }
  for (const auto& spec : optimizer->states()) {
    states_.push_back(create_partitioned(spec.per_element ? dim_ : 2, WHOLEMEMORY_DT_FLOAT, type_,
                                         location_, partition));
    const size_t count = static_cast<size_t>(local_rows()) * (spec.per_element ? dim_ : 2);
    fill_floats(nullptr, states_.back().local_data, count, spec.initial);
  }
  optimizer_ = std::move(optimizer);
  check_code(wholememory_communicator_barrier(comm_handle_), "wholememory_communicator_barrier");
}

const char* const* Embedding::state_names() const {
  static const char* const kNone[] = {nullptr};
  return optimizer_ ? optimizer_->state_names() : kNone;
}

wholememory_tensor_t Embedding::state(const char* name) const {
  MEMLOOM_CHECK_ARG(name != nullptr, "name is null");
  if (!optimizer_) return nullptr;
  const auto& specs = optimizer_->states();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (std::strcmp(specs[i].name, name) == 0) return states_[i].tensor;
  }
  return nullptr;
}

void Embedding::gather(wholememory_tensor_t indices, wholememory_tensor_t output,
                       wholememory_env_func_t* env, void* stream) {
  if (!has_cache_ || !cache_valid_) {
    check_code(wholememory_gather(table_.tensor, indices, output, env, stream, -1),
               "wholememory_gather");
    return;
  }
  // Each row from where its latest value is: the cache for cached rows, else the table. Both
  // gathers run on every rank (DISTRIBUTED ones are collective), with -1 for rows they skip.
  StreamWork work(stream, env);
  const auto wanted = read_integers(
      work, local_array(indices, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "indices"));
  std::vector<int64_t> from_table(wanted.size(), -1), from_cache(wanted.size(), -1);
  const auto& offsets = table_.offsets;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const int64_t row = wanted[i];
    if (row < 0 || row >= rows_) {
      from_table[i] = row;  // the table's gather reports (or skips) it
      continue;
    }
    const auto owner = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), row) -
                                           offsets.begin() - 1);
    const int64_t local = row - offsets[owner];
    if (local < cached_rows_[owner]) {
      from_cache[i] = cache_.offsets[owner] + local;
    } else {
      from_table[i] = row;
    }
  }
  const auto count = static_cast<int64_t>(wanted.size());
  IndexTensor table_list(work.upload(from_table), count);
  IndexTensor cache_list(work.upload(from_cache), count);
  check_code(wholememory_gather(table_.tensor, table_list.tensor, output, env, stream, -1),
             "wholememory_gather");
  check_code(wholememory_gather(cache_.tensor, cache_list.tensor, output, env, stream, -1),
             "wholememory_gather (cache)");
  work.synchronize();
}

void Embedding::fill_cache(void* stream) {
  if (!has_cache_ || cache_valid_) return;
  StreamWork work(stream, nullptr);
  const size_t bytes = static_cast<size_t>(cached_rows_[rank()]) * static_cast<size_t>(dim_) *
                       wholememory_dtype_get_element_size(dtype_);
  if (bytes > 0) work.stream().copy(cache_.local_data, table_.local_data, bytes);
  work.synchronize();
  cache_valid_ = true;
}

void Embedding::writeback_cache(void* stream) {
  if (has_cache_ && cache_valid_) {
    StreamWork work(stream, nullptr);
    const size_t bytes = static_cast<size_t>(cached_rows_[rank()]) * static_cast<size_t>(dim_) *
                         wholememory_dtype_get_element_size(dtype_);
    if (bytes > 0) work.stream().copy(table_.local_data, cache_.local_data, bytes);
    work.synchronize();
  }
  check_code(wholememory_communicator_barrier(comm_handle_), "wholememory_communicator_barrier");
}

void Embedding::drop_cache(void* stream) {
  (void)stream;  // nothing to enqueue: the cached copies are simply no longer read
  cache_valid_ = false;
  check_code(wholememory_communicator_barrier(comm_handle_), "wholememory_communicator_barrier");
}

}  // namespace memloom::wholememory
