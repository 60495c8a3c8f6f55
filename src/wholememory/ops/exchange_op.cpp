#include "src/wholememory/ops/exchange_op.h"

#include <algorithm>
#include <functional>

#include "memloom/error.h"
#include "src/core/group.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

EntryLayout::EntryLayout(const MemoryHandle& memory, size_t entry_bytes) {
  for (size_t offset : memory.plan().offsets) {
    offsets_.push_back(static_cast<int64_t>(offset / entry_bytes));
  }
}

int EntryLayout::owner(int64_t entry) const {
  // The last rank starting at or before the entry: empty partitions start where the next one
  // does, so they are passed over.
  const auto after = std::upper_bound(offsets_.begin(), offsets_.end(), entry);
  return static_cast<int>(after - offsets_.begin()) - 1;
}

int64_t EntryLayout::local_entry(int64_t entry) const {
  return entry - offsets_[owner(entry)];
}

int64_t EntryLayout::local_entries(int rank) const {
  return offsets_[rank + 1] - offsets_[rank];
}

int64_t EntryLayout::node_entries(int node, core::Group& group) const {
  int64_t entries = 0;
  for (int r = 0; r < group.size(); ++r) {
    if (group.node_index_of(r) == node) entries += local_entries(r);
  }
  return entries;
}

ExchangeWork::ExchangeWork(const ExchangeOperands& operands)
    : operands_(operands), deadline_(Deadline::after(core::default_collective_timeout())) {}

ExchangeWork::~ExchangeWork() {
  // After a failure the stream may still be using the buffers; they go only once it is done.
  release_quietly("an exchange's pending stream work", [&] {
    operands_.stream->stream().synchronize(Deadline::after(core::default_collective_timeout()));
  });
}

void ExchangeWork::read_back(void* host, const void* source, size_t bytes) {
  if (bytes > 0) operands_.stream->stream().copy(host, source, bytes);
  synchronize();
}

TempMemory* ExchangeWork::device_buffer(size_t bytes) {
  buffers_.push_back(std::make_unique<TempMemory>(operands_.env, WHOLEMEMORY_MA_DEVICE, bytes));
  return buffers_.back().get();
}

TempMemory* ExchangeWork::upload(std::vector<int64_t> values) {
  TempMemory* buffer = device_buffer(values.size() * sizeof(int64_t));
  staged_.push_back(std::move(values));
  if (buffer->bytes() > 0) {
    operands_.stream->stream().copy(buffer->data(), staged_.back().data(), buffer->bytes());
  }
  return buffer;
}

void ExchangeWork::copy_rows(Direction direction, const kernels::RowTable& source,
                             const kernels::RowTable& destination, const TempMemory* indices,
                             size_t count, int64_t bound) {
  if (count == 0) return;
  IndexList list;
  list.data = indices->data();
  list.type = kernels::DType::kInt64;
  list.count = static_cast<int64_t>(count);
  // Indices were checked before the exchange, so the slot only guards against a logic error here.
  std::lock_guard<std::mutex> lock(operands_.stream->enqueue_mutex());
  BadIndexRing& ring = operands_.stream->bad_index_ring(operands_.device);
  hal::Stream& stream = operands_.stream->stream();
  unsigned long long* bad_index = ring.begin(stream, "an exchange's row copy", bound, deadline_);
  enqueue_row_copy(stream, direction, source, destination, list, bound, operands_.table.columns,
                   bad_index);
  ring.end(stream);
}

void ExchangeWork::synchronize() {
  operands_.stream->synchronize(deadline_);
}

void agree_on_request(core::Group& group, const char* operation, int64_t first_bad, int64_t rows,
                      const std::string& shape, Deadline deadline) {
  struct Report {
    int64_t first_bad;
    int64_t rows;
    uint64_t shape_hash;
  };
  const Report mine{first_bad, rows, std::hash<std::string>{}(shape)};
  std::vector<Report> all(group.size());
  group.collectives().allgather(&mine, all.data(), sizeof(Report), deadline);
  for (int r = 0; r < group.size(); ++r) {
    if (all[r].first_bad == kRefusedOperands) {
      raise(Status::kInvalidInput, std::string(operation) + ": rank " + std::to_string(r) +
                                       " passed operands it refused; no rank moved any row");
    }
  }
  for (int r = 0; r < group.size(); ++r) {
    if (all[r].first_bad >= 0) {
      raise(Status::kInvalidInput,
            std::string(operation) + ": " +
                (r == group.rank() ? "this rank" : "rank " + std::to_string(r)) + " passed index " +
                std::to_string(all[r].first_bad) + ", past the table's " +
                std::to_string(all[r].rows) + " rows; no rank moved any row");
    }
  }
  for (int r = 0; r < group.size(); ++r) {
    if (all[r].shape_hash != all[0].shape_hash) {
      raise(Status::kInvalidInput, std::string(operation) + ": rank " + std::to_string(r) +
                                       " runs a different operation or row shape than rank 0 "
                                       "(this rank: " +
                                       shape + ")");
    }
  }
}

void join_exchange(const ExchangeOperands& operands, const char* operation, int64_t first_bad,
                   Deadline deadline) {
  if (operands.joined != nullptr) *operands.joined = true;
  const std::string kind = std::string(operation).substr(std::string(operation).find('_') + 1);
  agree_on_request(operands.memory->comm().group(), operation, first_bad, operands.table.rows,
                   describe_exchange(kind.c_str(), operands), deadline);
}

std::string describe_exchange(const char* operation, const ExchangeOperands& operands) {
  const auto& table = operands.table;
  return std::string(operation) + " on " + operands.memory->identity() + ": " +
         std::to_string(table.columns) + " columns of dtype " +
         std::to_string(static_cast<int>(table.dtype)) + " from column " +
         std::to_string(table.column_offset()) + " of " + std::to_string(table.stride);
}

}  // namespace memloom::wholememory
