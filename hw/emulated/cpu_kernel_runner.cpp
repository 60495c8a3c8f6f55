#include "hw/emulated/cpu_kernel_runner.h"

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include "hw/emulated/cpu_row_grouping.h"
#include "memloom/error.h"
#include "src/kernels/count_scan_kernel.h"
#include "src/kernels/fill_kernel.h"
#include "src/kernels/optimizer_kernel.h"
#include "src/kernels/owner_routing_kernel.h"
#include "src/kernels/row_copy_kernel.h"
#include "src/kernels/row_grouping_kernel.h"
#include "src/kernels/sampling_kernel.h"

namespace memloom::emulated {
namespace {

template <class Kernel>
void run_range_of(const void* args, size_t begin, size_t end) {
  const auto& typed = *static_cast<const typename Kernel::Args*>(args);
  for (size_t i = begin; i < end; ++i) Kernel::body(typed, i);
}

// Row copies run whole rows per item (the dispatcher's choice on CPUs) through copy_rows, which
// prefetches ahead and derives the layouts once per range rather than once per row.
template <bool kIndexedSource>
void run_row_copy_range(const void* args, size_t begin, size_t end) {
  using Kernel = kernels::IndexedRowCopy<kIndexedSource>;
  const auto& typed = *static_cast<const kernels::RowCopyArgs*>(args);
  if (typed.chunks_per_row != 1) {
    for (size_t i = begin; i < end; ++i) Kernel::body(typed, i);
    return;
  }
  Kernel::copy_rows(typed, static_cast<int64_t>(begin), static_cast<int64_t>(end));
}

// Routing runs a range of rows per call, so that shared counters are touched once per range.
void run_count_by_owner(const void* args, size_t begin, size_t end) {
  kernels::CountByOwner::count_rows(*static_cast<const kernels::OwnerRoutingArgs*>(args),
                                    static_cast<int64_t>(begin), static_cast<int64_t>(end));
}

void run_place_by_owner(const void* args, size_t begin, size_t end) {
  kernels::PlaceByOwner::place_rows(*static_cast<const kernels::OwnerRoutingArgs*>(args),
                                    static_cast<int64_t>(begin), static_cast<int64_t>(end));
}

// The grouping is one item: the whole list, sorted on one thread.
void run_group_rows(const void* args, size_t begin, size_t end) {
  if (begin < end) group_rows_on_cpu(*static_cast<const kernels::GroupRowsArgs*>(args));
}

// The scan is one item too: a sequential sum (the caller guarantees it fits INT32).
void run_scan_counts(const void* args, size_t begin, size_t end) {
  if (begin >= end) return;
  const auto& scan = *static_cast<const kernels::ScanCountsArgs*>(args);
  int32_t total = 0;
  for (int64_t i = 0; i <= scan.count; ++i) {
    scan.offsets[i] = total;
    if (i < scan.count) total += scan.counts[i];
  }
}

// A kernel whose Args are not a body's: the args struct is named directly.
template <class Args>
constexpr CpuKernel make_whole_kernel(const char* name,
                                      void (*run_range)(const void*, size_t, size_t)) {
  static_assert(alignof(Args) <= alignof(std::max_align_t));
  static_assert(std::is_trivially_copyable_v<Args>);
  return CpuKernel{name, sizeof(Args), 1, run_range};
}

template <class Kernel>
constexpr void check_args() {
  // Streams keep launch arguments in max_align_t storage.
  static_assert(alignof(typename Kernel::Args) <= alignof(std::max_align_t));
  static_assert(std::is_trivially_copyable_v<typename Kernel::Args>);
}

template <class Kernel>
constexpr CpuKernel make_cpu_kernel(const char* name, size_t min_chunk) {
  check_args<Kernel>();
  return CpuKernel{name, sizeof(typename Kernel::Args), min_chunk, &run_range_of<Kernel>};
}

template <bool kIndexedSource>
constexpr CpuKernel make_row_copy_kernel(const char* name, size_t min_chunk) {
  check_args<kernels::IndexedRowCopy<kIndexedSource>>();
  return CpuKernel{name, sizeof(kernels::RowCopyArgs), min_chunk,
                   &run_row_copy_range<kIndexedSource>};
}

template <class Kernel>
constexpr CpuKernel make_range_kernel(const char* name, size_t min_chunk,
                                      void (*run_range)(const void*, size_t, size_t)) {
  check_args<Kernel>();
  return CpuKernel{name, sizeof(typename Kernel::Args), min_chunk, run_range};
}

// Indexed by KernelId; the static_assert keeps it in step with hw/hal/kernels.h.
constexpr std::array<CpuKernel, static_cast<size_t>(hal::KernelId::kCount)> kKernels = {
    make_cpu_kernel<kernels::FillPatternKernel>("fill_pattern", 64 * 1024),
    // One row per item (whole-row chunks on CPU), so a few hundred rows make a worthwhile chunk.
    make_row_copy_kernel<true>("gather", 256),
    make_row_copy_kernel<false>("scatter", 256),
    // A row costs a few nanoseconds (an index load, a branch-free search over the partitions); a
    // range allocates its local counts and touches each shared counter once.
    make_range_kernel<kernels::CountByOwner>("count_by_owner", 16 * 1024, &run_count_by_owner),
    make_range_kernel<kernels::PlaceByOwner>("place_by_owner", 16 * 1024, &run_place_by_owner),
    // A whole row (or a row's state) per item: tens of nanoseconds to microseconds each.
    make_cpu_kernel<kernels::OptimizerApplyKernel>("optimizer_apply", 64),
    make_cpu_kernel<kernels::SampleCountKernel>("sample_count", 4096),
    // A centre's sampling costs fanout^2 / 2 comparisons (unweighted) or its degree (weighted).
    make_cpu_kernel<kernels::SampleNeighboursKernel>("sample_neighbours", 64),
    make_cpu_kernel<kernels::SelfLoopKernel>("add_self_loop", 1024),
    make_cpu_kernel<kernels::IndexRequestsKernel>("index_requests", 16 * 1024),
    make_whole_kernel<kernels::GroupRowsArgs>("group_rows", &run_group_rows),
    make_whole_kernel<kernels::ScanCountsArgs>("scan_counts", &run_scan_counts),
};
static_assert(kKernels.size() == static_cast<size_t>(hal::KernelId::kCount),
              "every KernelId needs a CPU runner");

}  // namespace

const CpuKernel& cpu_kernel(hal::KernelId id) {
  const auto index = static_cast<size_t>(id);
  if (index >= kKernels.size()) {
    raise(Status::kInvalidInput, "unknown kernel id " + std::to_string(index) + " (the table has " +
                                     std::to_string(kKernels.size()) + " kernels)");
  }
  return kKernels[index];
}

void run_cpu_kernel(ThreadPool& pool, const CpuKernel& kernel, const void* args,
                    size_t work_items) {
  pool.parallel_for(work_items, kernel.min_chunk,
                    [&](size_t begin, size_t end) { kernel.run_range(args, begin, end); });
}

}  // namespace memloom::emulated
