#include "src/wholememory/embedding/row_grouping.h"

#include "src/core/platform_loader.h"
#include "src/kernels/row_grouping_kernel.h"

namespace memloom::wholememory {

DeviceRequests enqueue_index_requests(StreamWork& work, const LocalArray& indices, int64_t rows,
                                      unsigned long long* first_bad) {
  DeviceRequests requests;
  requests.count = indices.count;
  const auto bytes = static_cast<size_t>(indices.count) * sizeof(int64_t);
  requests.keys = static_cast<int64_t*>(work.device_buffer(bytes));
  requests.positions = static_cast<int64_t*>(work.device_buffer(bytes));
  kernels::IndexRequestsArgs args{};
  args.indices = indices.data;
  args.index_type =
      indices.dtype == WHOLEMEMORY_DT_INT64 ? kernels::DType::kInt64 : kernels::DType::kInt;
  args.count = indices.count;
  args.rows = rows;
  args.keys = requests.keys;
  args.positions = requests.positions;
  args.first_bad = first_bad;
  work.launch(hal::KernelId::kIndexRequests, args, static_cast<size_t>(indices.count));
  return requests;
}

DeviceRowGroups enqueue_row_grouping(StreamWork& work, const DeviceRequests& requests,
                                     int64_t key_limit, unsigned long long* group_count) {
  if (requests.count == 0) return {};
  const auto count = static_cast<size_t>(requests.count);
  kernels::GroupRowsArgs args{};
  args.keys = requests.keys;
  args.positions = requests.positions;
  args.count = requests.count;
  args.key_limit = key_limit;
  args.rows = static_cast<int64_t*>(work.device_buffer(count * sizeof(int64_t)));
  args.first = static_cast<int64_t*>(work.device_buffer((count + 1) * sizeof(int64_t)));
  args.grouped_positions = static_cast<int64_t*>(work.device_buffer(count * sizeof(int64_t)));
  args.group_count = group_count;
  args.scratch_bytes = core::platform().kernel_scratch_bytes(hal::KernelId::kGroupRows, count);
  args.scratch = work.device_buffer(args.scratch_bytes);
  work.launch(hal::KernelId::kGroupRows, args, 1);
  return DeviceRowGroups{args.rows, args.first, args.grouped_positions};
}

}  // namespace memloom::wholememory
