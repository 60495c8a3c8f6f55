// The WholeMemory C API, part 2: allocations, their queries and file I/O. Every entry point runs
// through guarded() (wholememory_error.h); handles are validated against the Runtime registry.
#include <algorithm>
#include <mutex>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/collective_check.h"
#include "src/wholememory/enum_arguments.h"
#include "src/wholememory/file_io.h"
#include "src/wholememory/memory_handle.h"
#include "src/wholememory/partition_plan.h"
#include "src/wholememory/runtime.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholememory.h"

using memloom::raise;
using memloom::Status;
namespace wm = memloom::wholememory;

namespace {

const char* type_name(wholememory_memory_type_t type) {
  switch (type) {
    case WHOLEMEMORY_MT_CONTINUOUS:
      return "CONTINUOUS";
    case WHOLEMEMORY_MT_CHUNKED:
      return "CHUNKED";
    case WHOLEMEMORY_MT_DISTRIBUTED:
      return "DISTRIBUTED";
    case WHOLEMEMORY_MT_HIERARCHY:
      return "HIERARCHY";
    default:
      return "NONE";
  }
}

// Every entry point below that reaches an allocation holds it for its duration, so that a
// concurrent wholememory_free or wholememory_finalize waits for it (operation_gate.h).
wm::MemoryLease memory_of(wholememory_handle_t handle) {
  return wm::Runtime::instance().lease(handle);
}

}  // namespace

extern "C" {

wholememory_error_code_t wholememory_malloc(wholememory_handle_t* wholememory_handle_ptr,
                                            size_t total_size, wholememory_comm_t comm,
                                            wholememory_memory_type_t memory_type,
                                            wholememory_memory_location_t memory_location,
                                            size_t data_granularity, size_t* rank_entry_partition) {
  return wm::guarded("wholememory_malloc", [&] {
    auto& runtime = wm::Runtime::instance();
    auto owner = runtime.comm(comm);
    if (wholememory_handle_ptr != nullptr) *wholememory_handle_ptr = nullptr;
    std::lock_guard<std::mutex> lock(owner->collective_mutex());
    const auto deadline = wm::collective_deadline();

    // Check my own arguments, then compare them with every rank's, so that a bad argument on any
    // rank fails all ranks together instead of leaving some waiting.
    wm::MemorySpec spec;
    const auto local = wm::capture_failure([&] {
      // As upstream, the memory goes on the device the calling thread chose (unless a variable
      // fixed the device).
      memloom::core::platform().follow_caller_device();
      wm::checked_output(wholememory_handle_ptr, "wholememory_handle_ptr");
      if (total_size == 0) raise(Status::kInvalidValue, "total_size must be positive");
      const auto type = wm::checked_enum(memory_type, WHOLEMEMORY_MT_NONE, WHOLEMEMORY_MT_HIERARCHY,
                                         "wholememory_memory_type_t");
      const auto location = wm::checked_enum(memory_location, WHOLEMEMORY_ML_NONE,
                                             WHOLEMEMORY_ML_HOST, "wholememory_memory_location_t");
      if (!owner->supports(type, location)) {
        raise(Status::kNotSupported,
              std::string(type_name(type)) + " memory at location " +
                  std::to_string(static_cast<int>(location)) + " is not supported on this " +
                  (owner->intranode() ? "communicator" : "multi-node communicator"));
      }
      spec.total_size = total_size;
      spec.type = type;
      spec.location = location;
      spec.granularity = data_granularity;
      spec.plan = rank_entry_partition != nullptr
                      ? wm::PartitionPlan::from_entries(rank_entry_partition, owner->size(),
                                                        total_size, data_granularity)
                      : wm::PartitionPlan::equal(total_size, data_granularity, owner->size());
    });
    std::string arguments = "total_size=" + std::to_string(total_size) +
                            " type=" + std::to_string(wm::enum_bits(memory_type)) +
                            " location=" + std::to_string(wm::enum_bits(memory_location)) +
                            " granularity=" + std::to_string(data_granularity) + " partition=";
    arguments += rank_entry_partition != nullptr ? spec.plan.describe() : std::string("equal");
    wm::agree_on_arguments(owner->group(), "wholememory_malloc", arguments, local, deadline);

    const std::string identity = owner->group().next_object_prefix("memory").prefix();
    wm::Allocation allocation;
    allocation.comm = comm;
    allocation.memory = wm::create_memory_handle(owner, std::move(spec), identity, deadline);
    if (auto local_comm = allocation.memory->local_comm()) {
      allocation.local_comm = runtime.add_comm(local_comm);
      allocation.cross_comm = runtime.add_comm(allocation.memory->cross_comm());
    }
    *wholememory_handle_ptr = runtime.add_allocation(std::move(allocation));
  });
}

wholememory_error_code_t wholememory_free(wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_free", [&] {
    auto& runtime = wm::Runtime::instance();
    wm::Allocation allocation = runtime.allocation(wholememory_handle);
    auto& owner = allocation.memory->comm();
    {
      std::lock_guard<std::mutex> lock(owner.collective_mutex());
      // Allocations made on a HIERARCHY allocation's own communicators must go first, or their
      // communicator handles would die under them.
      const auto local = wm::capture_failure([&] {
        for (const auto& sub : {allocation.memory->local_comm(), allocation.memory->cross_comm()}) {
          if (sub && sub->live_allocations().load() > 0) {
            raise(Status::kInvalidInput,
                  "allocations made on this allocation's local or cross "
                  "communicator are still alive; free them first");
          }
        }
      });
      wm::agree_on_arguments(owner.group(), "wholememory_free", allocation.memory->identity(),
                             local, wm::collective_deadline());
    }
    // Unregistered first, so that operations starting now are refused; those already running
    // (and the stream work they enqueued) finish before the memory is unmapped.
    runtime.remove_allocation(wholememory_handle);
    if (allocation.local_comm != nullptr) runtime.remove_comm(allocation.local_comm);
    if (allocation.cross_comm != nullptr) runtime.remove_comm(allocation.cross_comm);
    wm::retire_memory(std::move(allocation.memory), wm::collective_deadline());
  });
}

wholememory_error_code_t wholememory_get_communicator(wholememory_comm_t* comm,
                                                      wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_communicator", [&] {
    const auto held = memory_of(wholememory_handle);
    const auto& allocation = held.allocation();
    *wm::checked_output(comm, "comm") = allocation.comm;
  });
}

wholememory_error_code_t wholememory_get_local_communicator(
    wholememory_comm_t* comm, wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_local_communicator", [&] {
    const auto held = memory_of(wholememory_handle);
    const auto& allocation = held.allocation();
    wm::checked_output(comm, "comm");
    if (allocation.local_comm == nullptr) {
      raise(Status::kNotSupported, "only HIERARCHY memory has a local communicator");
    }
    *comm = allocation.local_comm;
  });
}

wholememory_error_code_t wholememory_get_cross_communicator(
    wholememory_comm_t* comm, wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_cross_communicator", [&] {
    const auto held = memory_of(wholememory_handle);
    const auto& allocation = held.allocation();
    wm::checked_output(comm, "comm");
    if (allocation.cross_comm == nullptr) {
      raise(Status::kNotSupported, "only HIERARCHY memory has a cross communicator");
    }
    *comm = allocation.cross_comm;
  });
}

wholememory_memory_type_t wholememory_get_memory_type(wholememory_handle_t wholememory_handle) {
  return wm::guarded_value("wholememory_get_memory_type", WHOLEMEMORY_MT_NONE,
                           [&] { return memory_of(wholememory_handle)->spec().type; });
}

wholememory_memory_location_t wholememory_get_memory_location(
    wholememory_handle_t wholememory_handle) {
  return wm::guarded_value("wholememory_get_memory_location", WHOLEMEMORY_ML_NONE,
                           [&] { return memory_of(wholememory_handle)->spec().location; });
}

wholememory_distributed_backend_t wholememory_get_distributed_backend(
    wholememory_handle_t wholememory_handle) {
  return wm::guarded_value("wholememory_get_distributed_backend", WHOLEMEMORY_DB_NONE, [&] {
    memory_of(wholememory_handle);
    return WHOLEMEMORY_DB_NCCL;  // memory moves over the backend's collectives, never NVSHMEM
  });
}

size_t wholememory_get_total_size(wholememory_handle_t wholememory_handle) {
  return wm::guarded_value("wholememory_get_total_size", size_t{0},
                           [&] { return memory_of(wholememory_handle)->spec().total_size; });
}

size_t wholememory_get_data_granularity(wholememory_handle_t wholememory_handle) {
  return wm::guarded_value("wholememory_get_data_granularity", size_t{0},
                           [&] { return memory_of(wholememory_handle)->spec().granularity; });
}

wholememory_error_code_t wholememory_get_local_memory(void** local_ptr, size_t* local_size,
                                                      size_t* local_offset,
                                                      wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_local_memory", [&] {
    const auto memory = memory_of(wholememory_handle);
    if (local_ptr != nullptr) *local_ptr = memory->local_pointer();
    if (local_size != nullptr) *local_size = memory->local_size();
    if (local_offset != nullptr) *local_offset = memory->local_offset();
  });
}

wholememory_error_code_t wholememory_get_local_size(size_t* local_size,
                                                    wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_local_size", [&] {
    const auto memory = memory_of(wholememory_handle);
    *wm::checked_output(local_size, "local_size") = memory->local_size();
  });
}

wholememory_error_code_t wholememory_get_local_offset(size_t* local_offset,
                                                      wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_local_offset", [&] {
    const auto memory = memory_of(wholememory_handle);
    *wm::checked_output(local_offset, "local_offset") = memory->local_offset();
  });
}

wholememory_error_code_t wholememory_get_rank_memory(void** rank_memory_ptr,
                                                     size_t* rank_memory_size,
                                                     size_t* rank_memory_offset, int rank,
                                                     wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_rank_memory", [&] {
    const auto memory = memory_of(wholememory_handle);
    void* pointer = nullptr;
    if (!memory->rank_pointer(rank, &pointer)) {
      raise(Status::kInvalidInput, "rank " + std::to_string(rank) + "'s partition of this " +
                                       type_name(memory->spec().type) +
                                       " allocation is not mapped in this process");
    }
    if (rank_memory_ptr != nullptr) *rank_memory_ptr = pointer;
    if (rank_memory_size != nullptr) *rank_memory_size = memory->plan().sizes[rank];
    if (rank_memory_offset != nullptr) *rank_memory_offset = memory->plan().offsets[rank];
  });
}

wholememory_error_code_t wholememory_equal_entry_partition_plan(size_t* entry_per_rank,
                                                                size_t total_entry_count,
                                                                int world_size) {
  return wm::guarded("wholememory_equal_entry_partition_plan", [&] {
    *wm::checked_output(entry_per_rank, "entry_per_rank") =
        wm::equal_entries_per_rank(total_entry_count, world_size);
  });
}

wholememory_error_code_t wholememory_get_global_pointer(void** global_ptr,
                                                        wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_global_pointer", [&] {
    const auto memory = memory_of(wholememory_handle);
    wm::checked_output(global_ptr, "global_ptr");
    if (memory->global_pointer() == nullptr) {
      raise(Status::kInvalidInput, std::string(type_name(memory->spec().type)) +
                                       " memory on this communicator has no global pointer");
    }
    *global_ptr = memory->global_pointer();
  });
}

wholememory_error_code_t wholememory_get_global_reference(wholememory_gref_t* wholememory_gref,
                                                          wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_global_reference", [&] {
    const auto memory = memory_of(wholememory_handle);
    wm::checked_output(wholememory_gref, "wholememory_gref");
    if (!memory->has_global_reference()) {
      raise(Status::kInvalidInput, std::string(type_name(memory->spec().type)) +
                                       " memory on this communicator has no global reference");
    }
    *wholememory_gref = memory->global_reference();
  });
}

wholememory_error_code_t wholememory_get_rank_partition_sizes(
    size_t* rank_mem_sizes, wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_rank_partition_sizes", [&] {
    const auto memory = memory_of(wholememory_handle);
    const auto& sizes = memory->plan().sizes;
    std::copy(sizes.begin(), sizes.end(), wm::checked_output(rank_mem_sizes, "rank_mem_sizes"));
  });
}

wholememory_error_code_t wholememory_get_rank_partition_offsets(
    size_t* rank_mem_offsets, wholememory_handle_t wholememory_handle) {
  return wm::guarded("wholememory_get_rank_partition_offsets", [&] {
    const auto memory = memory_of(wholememory_handle);
    const auto& offsets = memory->plan().offsets;
    std::copy(offsets.begin(), offsets.end(),
              wm::checked_output(rank_mem_offsets, "rank_mem_offsets"));
  });
}

wholememory_error_code_t wholememory_load_from_file(wholememory_handle_t wholememory_handle,
                                                    size_t memory_offset, size_t memory_entry_size,
                                                    size_t file_entry_size, const char** file_names,
                                                    int file_count, int round_robin_size) {
  return wm::guarded("wholememory_load_from_file", [&] {
    const auto memory = memory_of(wholememory_handle);
    std::lock_guard<std::mutex> lock(memory->comm().collective_mutex());
    wm::load_from_files(*memory, {memory_offset, memory_entry_size, file_entry_size}, file_names,
                        file_count, round_robin_size, wm::collective_deadline());
  });
}

wholememory_error_code_t wholememory_store_to_file(wholememory_handle_t wholememory_handle,
                                                   size_t memory_offset, size_t memory_entry_stride,
                                                   size_t file_entry_size,
                                                   const char* local_file_name) {
  return wm::guarded("wholememory_store_to_file", [&] {
    const auto memory = memory_of(wholememory_handle);
    std::lock_guard<std::mutex> lock(memory->comm().collective_mutex());
    wm::store_to_file(*memory, {memory_offset, memory_entry_stride, file_entry_size},
                      local_file_name, wm::collective_deadline());
  });
}

wholememory_gref_t wholememory_create_continuous_global_reference(void* ptr) {
  wholememory_gref_t gref{};
  gref.pointer = ptr;
  gref.rank_memory_offsets = nullptr;
  gref.world_size = 1;
  gref.stride = 0;
  gref.same_chunk = true;
  return gref;
}

}  // extern "C"
