// A WholeMemory embedding (wholememory/embedding.h): the table, the optimizer's state tensors of
// the same partition, and an optional write-back cache.
//
// The cache (cache_policy.h) keeps the first ceil(ratio * rows) rows of every rank's partition in
// a WholeMemory tensor of the policy's type and location over the same communicator (device memory
// for a host table, say). It is filled from the table by the first gradient apply after creation
// or a drop (a collective call, so every rank switches at the same point), and from then on
// gathers read cached rows from it and gradient applies update them there; writeback_cache copies
// them back to the table, drop_all_cache forgets them (without writeback, their updates are lost).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/wholememory/communicator.h"
#include "src/wholememory/embedding/optimizer.h"
#include "wholememory/embedding.h"

namespace memloom::wholememory {

class StreamWork;
struct DeviceRowGroups;
struct LocalArray;

struct CachePolicy {
  wholememory_comm_t comm = nullptr;
  wholememory_memory_type_t type = WHOLEMEMORY_MT_NONE;
  wholememory_memory_location_t location = WHOLEMEMORY_ML_NONE;
  wholememory_access_type_t access = WHOLEMEMORY_AT_NONE;
  float ratio = 0;
};

// A WholeMemory tensor and the part of it this rank holds.
struct PartitionedTensor {
  wholememory_tensor_t tensor = nullptr;
  wholememory_tensor_t local = nullptr;  // made from a pointer over my partition
  char* local_data = nullptr;
  std::vector<int64_t> offsets;  // world_size + 1 entry offsets
};

class Embedding {
 public:
  // Collective over comm.
  Embedding(const wholememory_tensor_description_t& desc, wholememory_comm_t comm,
            wholememory_memory_type_t type, wholememory_memory_location_t location,
            const CachePolicy* cache, const size_t* entry_partition);
  // Collective: frees the tensors (call before dropping the last reference).
  void destroy();

  wholememory_tensor_t table() const { return table_.tensor; }
  int64_t rows() const { return rows_; }
  int64_t dim() const { return dim_; }
  wholememory_dtype_t dtype() const { return dtype_; }

  // Collective: creates and initialises the optimizer's states.
  void set_optimizer(std::shared_ptr<Optimizer> optimizer);
  const char* const* state_names() const;
  wholememory_tensor_t state(const char* name) const;

  void gather(wholememory_tensor_t indices, wholememory_tensor_t output,
              wholememory_env_func_t* env, void* stream);
  // Collective (gradient_apply.cpp).
  void apply(wholememory_tensor_t indices, wholememory_tensor_t grads, float lr,
             wholememory_env_func_t* env, void* stream);
  // Collective.
  void writeback_cache(void* stream);
  void drop_cache(void* stream);

 private:
  PartitionedTensor create_partitioned(int64_t columns, wholememory_dtype_t dtype,
                                       wholememory_memory_type_t type,
                                       wholememory_memory_location_t location,
                                       const std::vector<size_t>& partition);
  int rank() const { return comm_->rank(); }
  int64_t local_rows() const { return table_.offsets[rank() + 1] - table_.offsets[rank()]; }
  // Collective: loads every rank's cached rows from the table once the cache is empty.
  void fill_cache(void* stream);
  // Enqueues the optimizer's step over grouped requests (gradient_apply.cpp): `count` groups,
  // or, where `counters` is set (device memory: the first bad index, the number of groups, as a
  // one-rank apply leaves them), up to `count` groups and none after a bad index.
  void enqueue_step(StreamWork& work, const DeviceRowGroups& groups, int64_t count,
                    const void* incoming, const LocalArray& grads,
                    const unsigned long long* counters, float lr);

  wholememory_comm_t comm_handle_;
  std::shared_ptr<Communicator> comm_;
  int64_t rows_ = 0;
  int64_t dim_ = 0;
  wholememory_dtype_t dtype_ = WHOLEMEMORY_DT_UNKNOWN;
  wholememory_memory_type_t type_;
  wholememory_memory_location_t location_;
  PartitionedTensor table_;
  std::shared_ptr<Optimizer> optimizer_;
  std::vector<PartitionedTensor> states_;  // in the optimizer's state order
  bool has_cache_ = false;
  PartitionedTensor cache_;           // the cached rows of every rank, partitioned as the ranks
  std::vector<int64_t> cached_rows_;  // per rank
  bool cache_valid_ = false;
};

// Fills `bytes` at `destination` (memory the stream reaches) with copies of the float `value`.
void fill_floats(void* stream, void* destination, size_t count, float value);

}  // namespace memloom::wholememory
