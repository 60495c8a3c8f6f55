// The WholeMemory operation C API (wholememory/wholememory_op.h): checks the tensors, then runs
// the gather or scatter through the table's mappings (mapped_ops.h) or by exchanging rows with the
// other ranks (exchange_op.h), depending on the table's memory type.
#include <mutex>
#include <string>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/memory_handle.h"
#include "src/wholememory/ops/exchange_op.h"
#include "src/wholememory/ops/mapped_ops.h"
#include "src/wholememory/ops/op_stream.h"
#include "src/wholememory/ops/temp_memory.h"
#include "src/wholememory/quiet_release.h"
#include "src/wholememory/runtime.h"
#include "src/wholememory/tensor/tensor.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholememory_op.h"

using memloom::raise;
using memloom::Status;
namespace wm = memloom::wholememory;

namespace {

void check_aligned(const void* pointer, size_t alignment, const std::string& what) {
  MEMLOOM_CHECK_ARG(
      reinterpret_cast<uintptr_t>(pointer) % alignment == 0,
      what + " is not aligned to its element size of " + std::to_string(alignment) + " bytes");
}

// The storage of a tensor made from a pointer, which kernels read as data + offset elements.
void* local_storage(const wm::Tensor& tensor, const std::string& name) {
  MEMLOOM_CHECK_ARG(!tensor.is_wholememory, name + " must not be a WholeMemory tensor");
  return tensor.storage;
}

// Everything a gather or scatter works on, checked.
struct Operation {
  wm::Direction direction;
  wm::Tensor table;
  wm::MatrixShape table_shape;
  wm::IndexList indices;
  wm::Tensor rows;  // output of gather, input of scatter
  wm::MatrixShape rows_shape;
};

Operation check_operation(wm::Direction direction, wholememory_tensor_t table_handle,
                          wholememory_tensor_t indices_handle, wholememory_tensor_t rows_handle) {
  auto& registry = wm::TensorRegistry::instance();
  const std::string rows_name =
      direction == wm::Direction::kGather ? "output_tensor" : "input_tensor";
  Operation op{direction, registry.get(table_handle), {}, {}, registry.get(rows_handle), {}};
  op.table_shape = wm::matrix_shape(op.table.desc, "wholememory_tensor");

  const wm::Tensor indices = registry.get(indices_handle);
  void* index_storage = local_storage(indices, "indices_tensor");
  const auto& index_desc = indices.desc;
  MEMLOOM_CHECK_ARG(index_desc.dim == 1,
                    "indices_tensor must be 1-D, got dim " + std::to_string(index_desc.dim));
  MEMLOOM_CHECK_ARG(
      index_desc.dtype == WHOLEMEMORY_DT_INT || index_desc.dtype == WHOLEMEMORY_DT_INT64,
      "indices_tensor must be INT or INT64, got dtype " +
          std::to_string(static_cast<int>(index_desc.dtype)));
  op.indices.type = wm::to_op_dtype(index_desc.dtype);
  op.indices.count = index_desc.sizes[0];
  MEMLOOM_CHECK_ARG(op.indices.count >= 0, "indices_tensor has a negative size");
  const size_t index_bytes = wholememory_dtype_get_element_size(index_desc.dtype);
  op.indices.data = static_cast<char*>(index_storage) +
                    static_cast<size_t>(index_desc.storage_offset) * index_bytes;
  if (op.indices.count > 0) {
    MEMLOOM_CHECK_ARG(index_storage != nullptr, "indices_tensor has no memory");
    check_aligned(op.indices.data, index_bytes, "indices_tensor's data");
  }

  void* row_storage = local_storage(op.rows, rows_name);
  MEMLOOM_CHECK_ARG(op.rows.desc.dim == op.table.desc.dim,
                    rows_name + " must be " + std::to_string(op.table.desc.dim) +
                        "-D like the table, got dim " + std::to_string(op.rows.desc.dim));
  op.rows_shape = wm::matrix_shape(op.rows.desc, rows_name.c_str());
  MEMLOOM_CHECK_ARG(op.rows_shape.rows == op.indices.count,
                    rows_name + " has " + std::to_string(op.rows_shape.rows) + " rows for " +
                        std::to_string(op.indices.count) + " indices");
  MEMLOOM_CHECK_ARG(op.rows_shape.columns == op.table_shape.columns,
                    rows_name + " has " + std::to_string(op.rows_shape.columns) +
                        " columns, the table " + std::to_string(op.table_shape.columns));
  MEMLOOM_CHECK_ARG(
      wholememory_dtype_is_floating_number(op.rows_shape.dtype) ==
          wholememory_dtype_is_floating_number(op.table_shape.dtype),
      "the table and " + rows_name + " must both be floating-point or both integer types");
  if (op.indices.count > 0) {
    MEMLOOM_CHECK_ARG(row_storage != nullptr, rows_name + " has no memory");
    check_aligned(row_storage, op.rows_shape.element_bytes(), rows_name + "'s storage");
  }
  return op;
}

wm::OpStream& resolve_stream(void* stream, std::shared_ptr<wm::OpStream>* holder) {
  *holder = wm::StreamRegistry::instance().resolve(stream);
  return **holder;
}

// Records the operation's stream work with the table's gate when the operation ends, whether it
// enqueued everything or failed part way.
class StreamWorkTracker {
 public:
  StreamWorkTracker(wm::OperationGate& gate, memloom::hal::Stream& stream)
      : gate_(gate), stream_(stream) {}
  StreamWorkTracker(const StreamWorkTracker&) = delete;
  StreamWorkTracker& operator=(const StreamWorkTracker&) = delete;
  ~StreamWorkTracker() {
    wm::release_quietly("the record of an operation's stream work", [&] { gate_.track(stream_); });
  }

 private:
  wm::OperationGate& gate_;
  memloom::hal::Stream& stream_;
};

void run(Operation op, wholememory_env_func_t* env, void* stream_handle, bool* joined) {
  std::shared_ptr<wm::OpStream> holder;
  wm::OpStream& stream = resolve_stream(stream_handle, &holder);
  const int device = memloom::core::platform().current_device();
  const auto rows = wm::contiguous_table(op.rows.storage, op.rows_shape);
  const auto& shape = op.table_shape;

  if (!op.table.is_wholememory) {
    MEMLOOM_CHECK_ARG(op.table.storage != nullptr || op.indices.count == 0,
                      "wholememory_tensor has no memory");
    check_aligned(op.table.storage, shape.element_bytes(), "wholememory_tensor's storage");
    const auto table = wm::contiguous_table(op.table.storage, shape);
    const bool gather = op.direction == wm::Direction::kGather;
    wm::enqueue_checked_row_copy(stream, device, op.direction, gather ? table : rows,
                                 gather ? rows : table, op.indices, shape.rows, shape.columns);
    return;
  }

  // The lease keeps a concurrent wholememory_free or wholememory_finalize waiting until this call
  // returns; the tracker (destroyed first) records the stream work enqueued under it, which reads
  // or writes the table when the stream runs, so that they wait for that too.
  const wm::MemoryLease memory = wm::Runtime::instance().lease(op.table.handle);
  const StreamWorkTracker tracker(memory->gate(), stream.stream());
  wm::check_rows_within_entries(shape, "wholememory_tensor");
  MEMLOOM_CHECK_ARG(memory->spec().granularity % shape.entry_bytes() == 0,
                    "the tensor's entries of " + std::to_string(shape.entry_bytes()) +
                        " bytes do not divide the allocation's granularity");
  if (memory->has_global_reference()) {
    const auto table = memory->global_pointer() != nullptr
                           ? wm::contiguous_table(memory->global_pointer(), shape)
                           : wm::chunked_table(memory->global_reference(), shape);
    const bool gather = op.direction == wm::Direction::kGather;
    wm::enqueue_checked_row_copy(stream, device, op.direction, gather ? table : rows,
                                 gather ? rows : table, op.indices, shape.rows, shape.columns);
    return;
  }

  wm::ExchangeOperands operands;
  operands.memory = memory.memory();
  operands.table = shape;
  operands.indices = op.indices;
  operands.rows = rows;
  operands.stream = &stream;
  operands.device = device;
  operands.env = wm::checked_env(env);
  operands.joined = joined;
  const bool hierarchy = memory->spec().type == WHOLEMEMORY_MT_HIERARCHY;
  if (op.direction == wm::Direction::kGather) {
    hierarchy ? wm::hierarchy_gather(operands) : wm::distributed_gather(operands);
  } else {
    hierarchy ? wm::hierarchy_scatter(operands) : wm::distributed_scatter(operands);
  }
}

// A rank that fails before joining an exchange (bad operands, no temporary memory, an earlier
// error of its stream) leaves its peers waiting in it: it joins with a refusal, so that every rank
// fails now rather than at its deadline.
void refuse_exchange(const char* operation, wholememory_tensor_t table_handle) noexcept {
  try {
    const wm::Tensor table = wm::TensorRegistry::instance().get(table_handle);
    if (!table.is_wholememory) return;
    const auto memory = wm::Runtime::instance().allocation(table.handle).memory;
    if (memory->has_global_reference()) return;
    auto& comm = memory->comm();
    std::lock_guard<std::mutex> lock(comm.collective_mutex());
    wm::agree_on_request(comm.group(), operation, wm::kRefusedOperands, 0, "",
                         wm::collective_deadline());
  } catch (...) {
    // The refusal fails here as well; the caller reports this rank's own error.
  }
}

void run_operation(const char* operation, wm::Direction direction, wholememory_tensor_t table,
                   wholememory_tensor_t indices, wholememory_tensor_t rows,
                   wholememory_env_func_t* env, void* stream) {
  bool joined = false;
  try {
    run(check_operation(direction, table, indices, rows), env, stream, &joined);
  } catch (...) {
    if (!joined) refuse_exchange(operation, table);
    throw;
  }
}

}  // namespace

extern "C" {

wholememory_error_code_t wholememory_gather(wholememory_tensor_t wholememory_tensor,
                                            wholememory_tensor_t indices_tensor,
                                            wholememory_tensor_t output_tensor,
                                            wholememory_env_func_t* p_env_fns, void* stream,
                                            int gather_sms) {
  (void)gather_sms;  // launches are sized by the backend
  return wm::guarded("wholememory_gather", [&] {
    run_operation("wholememory_gather", wm::Direction::kGather, wholememory_tensor, indices_tensor,
                  output_tensor, p_env_fns, stream);
  });
}

wholememory_error_code_t wholememory_scatter(wholememory_tensor_t input_tensor,
                                             wholememory_tensor_t indices_tensor,
                                             wholememory_tensor_t wholememory_tensor,
                                             wholememory_env_func_t* p_env_fns, void* stream,
                                             int scatter_sms) {
  (void)scatter_sms;
  return wm::guarded("wholememory_scatter", [&] {
    run_operation("wholememory_scatter", wm::Direction::kScatter, wholememory_tensor,
                  indices_tensor, input_tensor, p_env_fns, stream);
  });
}

}  // extern "C"
