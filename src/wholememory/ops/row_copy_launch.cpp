#include "src/wholememory/ops/row_copy_launch.h"

#include <algorithm>

#include "memloom/error.h"
#include "src/core/platform_loader.h"

namespace memloom::wholememory {

static_assert(static_cast<int>(kernels::DType::kFloat) == WHOLEMEMORY_DT_FLOAT &&
                  static_cast<int>(kernels::DType::kHalf) == WHOLEMEMORY_DT_HALF &&
                  static_cast<int>(kernels::DType::kDouble) == WHOLEMEMORY_DT_DOUBLE &&
                  static_cast<int>(kernels::DType::kBf16) == WHOLEMEMORY_DT_BF16 &&
                  static_cast<int>(kernels::DType::kInt) == WHOLEMEMORY_DT_INT &&
                  static_cast<int>(kernels::DType::kInt64) == WHOLEMEMORY_DT_INT64 &&
                  static_cast<int>(kernels::DType::kInt16) == WHOLEMEMORY_DT_INT16 &&
                  static_cast<int>(kernels::DType::kInt8) == WHOLEMEMORY_DT_INT8,
              "kernels::DType must be numbered as wholememory_dtype_t");

kernels::DType to_op_dtype(wholememory_dtype_t dtype) {
  return static_cast<kernels::DType>(dtype);
}

kernels::RowTable contiguous_table(void* base, const MatrixShape& shape) {
  kernels::RowTable table{};
  table.base = static_cast<char*>(base);
  table.stride = shape.stride;
  table.offset = shape.offset;
  table.dtype = to_op_dtype(shape.dtype);
  return table;
}

kernels::RowTable packed_table(void* base, int64_t columns, wholememory_dtype_t dtype) {
  kernels::RowTable table{};
  table.base = static_cast<char*>(base);
  table.stride = columns;
  table.offset = 0;
  table.dtype = to_op_dtype(dtype);
  return table;
}

kernels::RowTable chunked_table(const wholememory_gref_t& gref, const MatrixShape& shape) {
  kernels::RowTable table{};
  table.chunks = static_cast<char* const*>(gref.pointer);
  table.offsets = gref.rank_memory_offsets;
  table.chunk_stride = gref.stride;
  table.world_size = gref.world_size;
  table.same_chunk = gref.same_chunk && gref.stride > 0 ? 1 : 0;
  table.stride = shape.stride;
  table.offset = shape.offset;
  table.dtype = to_op_dtype(shape.dtype);
  return table;
}

void enqueue_row_copy(hal::Stream& stream, Direction direction, const kernels::RowTable& source,
                      const kernels::RowTable& destination, const IndexList& indices, int64_t bound,
                      int64_t columns, unsigned long long* bad_index) {
  if (indices.count == 0) return;
  kernels::RowCopyArgs args{};
  args.source = source;
  args.destination = destination;
  args.indices = indices.data;
  args.index_type = indices.type;
  args.index_bound = bound;
  args.columns = columns;
  // A GPU gives each thread 16 bytes so that a warp reads a row's consecutive bytes together; a
  // CPU thread takes whole rows, each one memcpy (or one conversion loop).
  if (core::platform().capabilities().lockstep_kernel_threads) {
    const size_t widest =
        std::max(kernels::element_size(source.dtype), kernels::element_size(destination.dtype));
    args.chunk_columns = std::max<int64_t>(1, static_cast<int64_t>(16 / widest));
  } else {
    args.chunk_columns = columns;
  }
  args.chunks_per_row = (columns + args.chunk_columns - 1) / args.chunk_columns;
  args.rows = indices.count;
  args.bad_index = bad_index;
  hal::KernelLaunch launch{};
  launch.id = direction == Direction::kGather ? hal::KernelId::kGather : hal::KernelId::kScatter;
  launch.args = &args;
  launch.args_size = sizeof(args);
  launch.work_items = static_cast<size_t>(indices.count) * static_cast<size_t>(args.chunks_per_row);
  stream.launch(launch);
}

}  // namespace memloom::wholememory
