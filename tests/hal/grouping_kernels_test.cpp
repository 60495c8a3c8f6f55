// HAL conformance: the whole-list kernels of the kernel table, kGroupRows and kScanCounts
// (src/kernels/row_grouping_kernel.h, count_scan_kernel.h), against plain host references: CUB's
// sort and scan on the CUDA backend, the CPU runners (dense and sparse grouping) on the emulated
// one, each with scratch memory sized by Platform::kernel_scratch_bytes.
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "src/kernels/count_scan_kernel.h"
#include "src/kernels/row_grouping_kernel.h"
#include "tests/hal/hal_test_helpers.h"

namespace memloom::hal_test {
namespace {

using hal::MemoryKind;

// Arrays carved from one device segment (256-byte aligned each).
class DeviceArrays {
 public:
  explicit DeviceArrays(size_t bytes) : segment_(MemoryKind::kDevice, bytes + 16 * 256) {}
  void* take(size_t bytes) {
    void* at = segment_.address + used_;
    used_ += (bytes + 255) / 256 * 256;
    return at;
  }

 private:
  MappedSegment segment_;
  size_t used_ = 0;
};

template <typename T>
void upload(hal::Stream& stream, void* device, const std::vector<T>& values, HostBuffer& staging) {
  std::memcpy(staging.data(), values.data(), values.size() * sizeof(T));
  stream.copy(device, staging.data(), values.size() * sizeof(T));
  stream.synchronize(soon());
}

template <typename T>
std::vector<T> download(hal::Stream& stream, const void* device, size_t count) {
  const auto bytes = read_back(stream, device, count * sizeof(T));
  std::vector<T> values(count);
  if (count > 0) std::memcpy(values.data(), bytes.data(), bytes.size());  // no null to memcpy
  return values;
}

struct Groups {
  std::vector<int64_t> rows, first, positions;
};

// Stable by construction: requests in list order, bucketed by key.
Groups reference_groups(const std::vector<int64_t>& keys, const std::vector<int64_t>& positions,
                        int64_t key_limit) {
  std::vector<size_t> order;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] >= 0 && keys[i] < key_limit) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  Groups groups;
  for (size_t at = 0; at < order.size(); ++at) {
    if (at == 0 || keys[order[at]] != keys[order[at - 1]]) {
      groups.rows.push_back(keys[order[at]]);
      groups.first.push_back(static_cast<int64_t>(at));
    }
    groups.positions.push_back(positions[order[at]]);
  }
  groups.first.push_back(static_cast<int64_t>(order.size()));
  return groups;
}

TEST(GroupingKernels, GroupRowsMatchesAStableSort) {
  auto stream = platform().create_stream(platform().current_device());
  std::mt19937_64 rng(5);
  // Dense and sparse key ranges; keys outside [0, key_limit) ask for nothing.
  for (const int64_t key_limit : {int64_t{1}, int64_t{37}, int64_t{5000}, int64_t{1} << 33}) {
    for (const size_t count : {size_t{1}, size_t{2}, size_t{1000}, size_t{70000}}) {
      SCOPED_TRACE("key_limit " + std::to_string(key_limit) + " count " + std::to_string(count));
      const int64_t spread = std::min<int64_t>(key_limit, 3000);  // duplicates in every case
      std::uniform_int_distribution<int64_t> pick(-2, spread + 1);
      std::vector<int64_t> keys(count), positions(count);
      for (size_t i = 0; i < count; ++i) {
        int64_t key = pick(rng);
        if (key_limit > spread && key >= 0 && key < spread) key *= key_limit / spread;
        if (key == spread + 1) key = key_limit;  // just past the range
        keys[i] = key;
        positions[i] = 3 * static_cast<int64_t>(i) - 1000;  // any values, all distinct
      }
      const Groups expected = reference_groups(keys, positions, key_limit);
      const size_t scratch_bytes =
          platform().kernel_scratch_bytes(hal::KernelId::kGroupRows, count);
      DeviceArrays arrays(6 * (count + 1) * sizeof(int64_t) + scratch_bytes);
      HostBuffer staging(count * sizeof(int64_t));
      kernels::GroupRowsArgs args{};
      auto* device_keys = static_cast<int64_t*>(arrays.take(count * sizeof(int64_t)));
      auto* device_positions = static_cast<int64_t*>(arrays.take(count * sizeof(int64_t)));
      upload(*stream, device_keys, keys, staging);
      upload(*stream, device_positions, positions, staging);
      args.keys = device_keys;
      args.positions = device_positions;
      args.count = static_cast<int64_t>(count);
      args.key_limit = key_limit;
      args.rows = static_cast<int64_t*>(arrays.take(count * sizeof(int64_t)));
      args.first = static_cast<int64_t*>(arrays.take((count + 1) * sizeof(int64_t)));
      args.grouped_positions = static_cast<int64_t*>(arrays.take(count * sizeof(int64_t)));
      args.group_count = static_cast<unsigned long long*>(arrays.take(sizeof(unsigned long long)));
      args.scratch = scratch_bytes > 0 ? arrays.take(scratch_bytes) : nullptr;
      args.scratch_bytes = scratch_bytes;
      stream->launch({hal::KernelId::kGroupRows, &args, sizeof(args), 1});
      const auto groups = download<unsigned long long>(*stream, args.group_count, 1)[0];
      ASSERT_EQ(expected.rows.size(), groups);
      EXPECT_EQ(expected.rows, download<int64_t>(*stream, args.rows, groups));
      EXPECT_EQ(expected.first, download<int64_t>(*stream, args.first, groups + 1));
      EXPECT_EQ(expected.positions,
                download<int64_t>(*stream, args.grouped_positions, expected.positions.size()));
    }
  }
}

TEST(GroupingKernels, ScanCountsIsTheExclusiveSum) {
  auto stream = platform().create_stream(platform().current_device());
  std::mt19937_64 rng(6);
  std::uniform_int_distribution<int32_t> pick(0, 30);
  for (const size_t count : {size_t{0}, size_t{1}, size_t{999}, size_t{300000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::vector<int32_t> counts(count + 1, 0);
    for (size_t i = 0; i < count; ++i) counts[i] = pick(rng);
    std::vector<int32_t> expected(count + 1, 0);
    for (size_t i = 0; i < count; ++i) expected[i + 1] = expected[i] + counts[i];
    const size_t scratch_bytes = platform().kernel_scratch_bytes(hal::KernelId::kScanCounts, count);
    DeviceArrays arrays(2 * (count + 1) * sizeof(int32_t) + scratch_bytes);
    HostBuffer staging((count + 1) * sizeof(int32_t));
    kernels::ScanCountsArgs args{};
    auto* device_counts = static_cast<int32_t*>(arrays.take((count + 1) * sizeof(int32_t)));
    upload(*stream, device_counts, counts, staging);
    args.counts = device_counts;
    args.offsets = static_cast<int32_t*>(arrays.take((count + 1) * sizeof(int32_t)));
    args.count = static_cast<int64_t>(count);
    args.scratch = scratch_bytes > 0 ? arrays.take(scratch_bytes) : nullptr;
    args.scratch_bytes = scratch_bytes;
    stream->launch({hal::KernelId::kScanCounts, &args, sizeof(args), 1});
    EXPECT_EQ(expected, download<int32_t>(*stream, args.offsets, count + 1));
  }
}

}  // namespace
}  // namespace memloom::hal_test
