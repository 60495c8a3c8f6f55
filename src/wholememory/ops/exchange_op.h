// The pieces shared by gather and scatter over tables that are not mapped in full (DISTRIBUTED,
// and HIERARCHY across nodes): the operands, where each storage entry lives, the check that every
// rank's indices are valid before any row moves, and a helper that runs kernels and copies on the
// caller's stream with temporary memory from the caller's environment.
//
// These operations are collective and run synchronously inside the call: how many rows go to each
// rank is read on the host before the exchange, so the stream is synchronized first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/hal/collectives.h"
#include "hw/hal/kernels.h"
#include "memloom/deadline.h"
#include "src/wholememory/memory_handle.h"
#include "src/wholememory/ops/op_stream.h"
#include "src/wholememory/ops/row_copy_launch.h"
#include "src/wholememory/ops/temp_memory.h"
#include "src/wholememory/tensor/tensor.h"

namespace memloom::wholememory {

struct ExchangeOperands {
  std::shared_ptr<MemoryHandle> memory;
  MatrixShape table;       // the WholeMemory tensor over its storage
  IndexList indices;       // in user memory
  kernels::RowTable rows;  // the output (gather) or input (scatter), in user memory
  OpStream* stream = nullptr;
  int device = 0;
  wholememory_env_func_t* env = nullptr;
  // Set once this rank has entered the operation's first collective step (agree_on_request), so
  // a failure before it knows the peers are still to be told.
  bool* joined = nullptr;
};

// Where storage entries (rows of the table's storage) live: rank partitions, and for HIERARCHY
// the node-wide ranges each node maps.
class EntryLayout {
 public:
  EntryLayout(const MemoryHandle& memory, size_t entry_bytes);
  int owner(int64_t entry) const;
  // The entry's index in its owner's partition.
  int64_t local_entry(int64_t entry) const;
  int64_t local_entries(int rank) const;
  // The entries of a node's node-wide range (partitions of that node's ranks back to back in rank
  // order).
  int64_t node_entries(int node, core::Group& group) const;
  // world_size + 1 entries: rank r holds entries [offsets()[r], offsets()[r + 1]).
  const std::vector<int64_t>& offsets() const { return offsets_; }

 private:
  std::vector<int64_t> offsets_;  // world_size + 1 entry offsets
};

// Runs on the operation's stream; every buffer is temporary memory of the environment, owned here
// and released only after the stream has finished with it (also when the operation fails).
class ExchangeWork {
 public:
  explicit ExchangeWork(const ExchangeOperands& operands);
  ~ExchangeWork();
  ExchangeWork(const ExchangeWork&) = delete;
  ExchangeWork& operator=(const ExchangeWork&) = delete;

  // Device-readable memory for `bytes` (rows to exchange or to serve).
  TempMemory* device_buffer(size_t bytes);
  // A device-readable copy of `values`, copied on the stream.
  TempMemory* upload(std::vector<int64_t> values);
  // Enqueues a kernel of the shared table (hw/hal/kernels.h) over `work_items` items.
  template <class Args>
  void launch(hal::KernelId id, const Args& args, size_t work_items) {
    operands_.stream->stream().launch(hal::KernelLaunch{id, &args, sizeof(args), work_items});
  }
  // Copies `bytes` of device-readable `source` to `host` after the work already enqueued, and
  // waits for them.
  void read_back(void* host, const void* source, size_t bytes);
  // Enqueues a row copy whose indices are device-readable int64 `indices` of `count` entries.
  void copy_rows(Direction direction, const kernels::RowTable& source,
                 const kernels::RowTable& destination, const TempMemory* indices, size_t count,
                 int64_t bound);
  void synchronize();

 private:
  const ExchangeOperands& operands_;
  Deadline deadline_;
  std::vector<std::vector<int64_t>> staged_;  // host sources of uploads (heap buffers stay put)
  std::vector<std::unique_ptr<TempMemory>> buffers_;
};

// Runs `body` (the collective part of an operation) and, when it fails on this rank, aborts the
// group's collectives so that peers waiting in an exchange fail now rather than at their deadline.
template <typename Body>
void abort_peers_on_failure(core::Group& group, Body&& body) {
  try {
    body();
  } catch (const std::exception& error) {
    group.collectives().abort(error.what());
    throw;
  }
}

// `first_bad` of a rank whose operands were refused before it could look at its indices.
constexpr int64_t kRefusedOperands = -2;

// Collective over `group`: fails every rank together when any rank found an index past the table
// (`first_bad` >= 0 on that rank) or had its operands refused (kRefusedOperands), or when ranks
// run different operations or row shapes.
void agree_on_request(core::Group& group, const char* operation, int64_t first_bad, int64_t rows,
                      const std::string& shape, Deadline deadline);

// The first collective step of an exchanging operation: marks `operands` as joined, then agrees.
void join_exchange(const ExchangeOperands& operands, const char* operation, int64_t first_bad,
                   Deadline deadline);

// A description of the operation every rank must agree on.
std::string describe_exchange(const char* operation, const ExchangeOperands& operands);

// Collective over the table's communicator (and, across nodes, its local communicator).
void distributed_gather(const ExchangeOperands& operands);
void distributed_scatter(const ExchangeOperands& operands);
void hierarchy_gather(const ExchangeOperands& operands);
void hierarchy_scatter(const ExchangeOperands& operands);

}  // namespace memloom::wholememory
