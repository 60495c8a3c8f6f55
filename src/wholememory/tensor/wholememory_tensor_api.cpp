// The WholeMemory tensor C API (wholememory/wholememory_tensor.h). Every entry point runs through
// guarded() (wholememory_error.h); tensor handles are checked against the TensorRegistry and
// allocation handles against the Runtime.
#include <algorithm>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/wholememory/memory_handle.h"
#include "src/wholememory/runtime.h"
#include "src/wholememory/tensor/tensor.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholememory_tensor.h"

using memloom::raise;
using memloom::Status;
namespace wm = memloom::wholememory;

namespace {

// Held for the caller's duration, so that a concurrent wholememory_free or wholememory_finalize
// waits for it (operation_gate.h); kInvalidInput once the memory is freed.
wm::MemoryLease memory_of(const wm::Tensor& tensor) {
  return wm::Runtime::instance().lease(tensor.handle);
}

// One number per rank of the tensor's partition plan (`numbers`: its offsets or its sizes, in
// bytes), written to `out` in entries. The memory is held over the loop.
void write_plan_in_entries(size_t* out, const wm::Tensor& tensor, size_t entry,
                           std::vector<size_t> wm::PartitionPlan::*numbers) {
  const auto memory = memory_of(tensor);
  for (size_t bytes : memory->plan().*numbers) *out++ = bytes / entry;
}

bool valid_dtype(wholememory_dtype_t dtype) {
  return dtype > WHOLEMEMORY_DT_UNKNOWN && dtype < WHOLEMEMORY_DT_COUNT;
}

// A WholeMemory tensor's storage must hold whole entries per rank: an entry never straddles two
// ranks' partitions, and the tensor ends inside the allocation.
void check_fits_allocation(const wm::MatrixShape& shape, const wm::MemoryHandle& memory) {
  wm::check_rows_within_entries(shape, "the tensor");
  const size_t entry = shape.entry_bytes();
  MEMLOOM_CHECK_ARG(memory.spec().granularity % entry == 0,
                    "tensor entries of " + std::to_string(entry) +
                        " bytes would straddle partitions of granularity " +
                        std::to_string(memory.spec().granularity));
  const int64_t last_element =
      shape.rows == 0 ? 0 : shape.offset + (shape.rows - 1) * shape.stride + shape.columns;
  MEMLOOM_CHECK_ARG(
      static_cast<size_t>(last_element) * shape.element_bytes() <= memory.spec().total_size,
      "tensor of " + std::to_string(shape.rows) + " x " + std::to_string(shape.columns) +
          " reaches past the allocation of " + std::to_string(memory.spec().total_size) + " bytes");
}

// Each dimension's stride must step over the whole of the dimension inside it, or elements of
// different rows would share storage and an operation sized by the description would reach past
// what the caller owns (for 2-D: strides[0] >= sizes[1]). Sizes must not be negative.
void check_no_overlap(const wholememory_tensor_description_t& desc) {
  for (int i = 0; i < desc.dim; ++i) {
    MEMLOOM_CHECK_ARG(desc.sizes[i] >= 0, "size " + std::to_string(i) + " is negative (" +
                                              std::to_string(desc.sizes[i]) + ")");
  }
  for (int i = 0; i + 1 < desc.dim; ++i) {
    const int64_t inner = desc.sizes[i + 1] * desc.strides[i + 1];
    const std::string next = std::to_string(i + 1);
    MEMLOOM_CHECK_ARG(desc.strides[i] >= inner,
                      "strides[" + std::to_string(i) + "] = " + std::to_string(desc.strides[i]) +
                          " is smaller than sizes[" + next + "] * strides[" + next +
                          "] = " + std::to_string(desc.sizes[i + 1]) + " * " +
                          std::to_string(desc.strides[i + 1]) + ": the rows overlap");
  }
}

// Entries of a tensor: rows for 2-D, elements for 1-D. Partition byte counts are multiples of the
// entry by construction (check_fits_allocation), so the division is exact.
size_t entry_bytes_of(const wm::Tensor& tensor) {
  return wm::matrix_shape(tensor.desc, "tensor").entry_bytes();
}

// The entry queries of a tensor: `output` checked, then answer(tensor, its entry's bytes) fills it.
template <typename Answer>
wholememory_error_code_t entry_query(const char* function, size_t* output, const char* output_name,
                                     wholememory_tensor_t handle, Answer&& answer) {
  return wm::guarded(function, [&] {
    wm::checked_output(output, output_name);
    const wm::Tensor tensor = wm::TensorRegistry::instance().get(handle);
    answer(tensor, entry_bytes_of(tensor));
  });
}

}  // namespace

extern "C" {

wholememory_error_code_t wholememory_create_tensor(
    wholememory_tensor_t* wholememory_tensor, wholememory_tensor_description_t* tensor_description,
    wholememory_comm_t comm, wholememory_memory_type_t memory_type,
    wholememory_memory_location_t memory_location, size_t* tensor_entry_partition) {
  size_t total_size = 0, granularity = 0;
  const auto checked = wm::guarded("wholememory_create_tensor", [&] {
    wm::checked_output(wholememory_tensor, "wholememory_tensor");
    *wholememory_tensor = nullptr;
    wm::checked_output(tensor_description, "tensor_description");
    const wm::MatrixShape shape = wm::matrix_shape(*tensor_description, "tensor_description");
    MEMLOOM_CHECK_ARG(shape.offset == 0, "a new tensor's storage_offset must be 0, got " +
                                             std::to_string(shape.offset));
    MEMLOOM_CHECK_ARG(shape.rows > 0, "a new tensor needs at least one entry");
    granularity = shape.entry_bytes();
    total_size = static_cast<size_t>(shape.rows) * granularity;
  });
  if (checked != WHOLEMEMORY_SUCCESS) {
    // Take part in the allocation with a size every rank refuses, so the other ranks fail now
    // instead of waiting for this one until their deadline.
    wholememory_handle_t ignored = nullptr;
    (void)wholememory_malloc(&ignored, 0, comm, memory_type, memory_location, 1, nullptr);
    return checked;
  }
  wholememory_handle_t handle = nullptr;
  const auto allocated = wholememory_malloc(&handle, total_size, comm, memory_type, memory_location,
                                            granularity, tensor_entry_partition);
  if (allocated != WHOLEMEMORY_SUCCESS) return allocated;
  return wm::guarded("wholememory_create_tensor", [&] {
    wm::Tensor tensor;
    tensor.is_wholememory = true;
    tensor.handle = handle;
    tensor.desc = *tensor_description;
    tensor.owns_handle = true;
    *wholememory_tensor = wm::TensorRegistry::instance().add(tensor);
  });
}

wholememory_error_code_t wholememory_destroy_tensor(wholememory_tensor_t wholememory_tensor) {
  wm::Tensor tensor;
  const auto found = wm::guarded("wholememory_destroy_tensor", [&] {
    tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
  });
  if (found != WHOLEMEMORY_SUCCESS) return found;
  if (tensor.owns_handle) {
    // The tensor stays registered when the collective free fails, so the caller can retry.
    const auto freed = wholememory_free(tensor.handle);
    if (freed != WHOLEMEMORY_SUCCESS) return freed;
  }
  return wm::guarded("wholememory_destroy_tensor",
                     [&] { wm::TensorRegistry::instance().remove(wholememory_tensor); });
}

wholememory_error_code_t wholememory_make_tensor_from_pointer(
    wholememory_tensor_t* wholememory_tensor, void* storage_ptr,
    wholememory_tensor_description_t* tensor_description) {
  return wm::guarded("wholememory_make_tensor_from_pointer", [&] {
    wm::checked_output(wholememory_tensor, "wholememory_tensor");
    *wholememory_tensor = nullptr;
    const auto& desc = *wm::checked_output(tensor_description, "tensor_description");
    wm::Tensor tensor;
    tensor.storage = storage_ptr;
    tensor.desc = desc;
    // As upstream: a tensor without storage, or a 0-D one, is a placeholder (pylibwholegraph
    // passes absent operands so, with an initialised description of unknown dtype) and is taken
    // as it is; operations refuse it where they need its memory.
    if (storage_ptr == nullptr || desc.dim == 0) {
      *wholememory_tensor = wm::TensorRegistry::instance().add(tensor);
      return;
    }
    MEMLOOM_CHECK_ARG(desc.dim > 0 && desc.dim <= WHOLEMEMORY_MAX_TENSOR_DIM,
                      "tensor dim " + std::to_string(desc.dim) + " is outside [0, " +
                          std::to_string(WHOLEMEMORY_MAX_TENSOR_DIM) + "]");
    MEMLOOM_CHECK_ARG(valid_dtype(desc.dtype),
                      "unknown dtype " + std::to_string(static_cast<int>(desc.dtype)));
    MEMLOOM_CHECK_ARG(
        desc.strides[desc.dim - 1] == 1,
        "the innermost stride must be 1, got " + std::to_string(desc.strides[desc.dim - 1]));
    MEMLOOM_CHECK_ARG(desc.storage_offset >= 0, "storage_offset is negative");
    check_no_overlap(desc);
    *wholememory_tensor = wm::TensorRegistry::instance().add(tensor);
  });
}

wholememory_error_code_t wholememory_make_tensor_from_handle(
    wholememory_tensor_t* wholememory_tensor, wholememory_handle_t wholememory_handle,
    wholememory_tensor_description_t* tensor_description) {
  return wm::guarded("wholememory_make_tensor_from_handle", [&] {
    wm::checked_output(wholememory_tensor, "wholememory_tensor");
    *wholememory_tensor = nullptr;
    const auto& desc = *wm::checked_output(tensor_description, "tensor_description");
    wm::Tensor tensor;
    tensor.is_wholememory = true;
    tensor.handle = wholememory_handle;
    tensor.desc = desc;
    check_fits_allocation(wm::matrix_shape(desc, "tensor_description"), *memory_of(tensor));
    *wholememory_tensor = wm::TensorRegistry::instance().add(tensor);
  });
}

bool wholememory_tensor_has_handle(wholememory_tensor_t wholememory_tensor) {
  return wm::guarded_value("wholememory_tensor_has_handle", false, [&] {
    return wm::TensorRegistry::instance().get(wholememory_tensor).is_wholememory;
  });
}

wholememory_handle_t wholememory_tensor_get_memory_handle(wholememory_tensor_t wholememory_tensor) {
  return wm::guarded_value<wholememory_handle_t>(
      "wholememory_tensor_get_memory_handle", nullptr, [&] {
        const wm::Tensor tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
        return tensor.is_wholememory ? tensor.handle : nullptr;
      });
}

wholememory_tensor_description_t* wholememory_tensor_get_tensor_description(
    wholememory_tensor_t wholememory_tensor) {
  return wm::guarded_value<wholememory_tensor_description_t*>(
      "wholememory_tensor_get_tensor_description", nullptr, [&] {
        wm::Tensor* tensor = wm::TensorRegistry::instance().find(wholememory_tensor);
        if (tensor == nullptr) {
          raise(Status::kInvalidInput, "tensor handle is not a live tensor (destroyed or garbage)");
        }
        return &tensor->desc;
      });
}

wholememory_error_code_t wholememory_tensor_get_global_reference(
    wholememory_tensor_t wholememory_tensor, wholememory_gref_t* wholememory_gref) {
  wm::Tensor tensor;
  const auto found = wm::guarded("wholememory_tensor_get_global_reference", [&] {
    wm::checked_output(wholememory_gref, "wholememory_gref");
    tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
    if (!tensor.is_wholememory) {
      *wholememory_gref = wholememory_create_continuous_global_reference(tensor.storage);
    }
  });
  if (found != WHOLEMEMORY_SUCCESS || !tensor.is_wholememory) return found;
  return wholememory_get_global_reference(wholememory_gref, tensor.handle);
}

wholememory_error_code_t wholememory_tensor_map_local_tensor(
    wholememory_tensor_t wholememory_tensor, wholememory_tensor_t* local_tensor) {
  return wm::guarded("wholememory_tensor_map_local_tensor", [&] {
    wm::checked_output(local_tensor, "local_tensor");
    *local_tensor = nullptr;
    const wm::Tensor tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
    if (!tensor.is_wholememory) {
      raise(Status::kInvalidValue, "only a WholeMemory tensor has a local part to map");
    }
    const wm::MatrixShape shape = wm::matrix_shape(tensor.desc, "tensor");
    // Local entries are counted from the start of the storage, so the tensor must start in entry 0.
    if (shape.first_entry() != 0) {
      raise(Status::kInvalidValue,
            "the tensor starts at entry " + std::to_string(shape.first_entry()) +
                " of its storage; only a tensor starting in entry 0 maps to local entries");
    }
    const auto memory = memory_of(tensor);
    const size_t entry = shape.entry_bytes();
    const size_t tensor_end = static_cast<size_t>(shape.rows) * entry;
    const size_t start = std::min(memory->local_offset(), tensor_end);
    const size_t end = std::min(memory->local_offset() + memory->local_size(), tensor_end);
    wm::Tensor local;
    local.storage = memory->local_pointer();
    local.desc = tensor.desc;
    local.desc.sizes[0] = static_cast<int64_t>((end - start) / entry);
    *local_tensor = wm::TensorRegistry::instance().add(local);
  });
}

void* wholememory_tensor_get_data_pointer(wholememory_tensor_t wholememory_tensor) {
  return wm::guarded_value<void*>("wholememory_tensor_get_data_pointer", nullptr, [&]() -> void* {
    const wm::Tensor tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
    char* base = static_cast<char*>(tensor.storage);
    if (tensor.is_wholememory) {
      const auto memory = memory_of(tensor);
      if (memory->spec().type != WHOLEMEMORY_MT_CONTINUOUS) return nullptr;
      base = static_cast<char*>(memory->global_pointer());
    }
    if (base == nullptr) return nullptr;
    return base + wholememory_dtype_get_element_size(tensor.desc.dtype) *
                      static_cast<size_t>(tensor.desc.storage_offset);
  });
}

wholememory_error_code_t wholememory_tensor_get_entry_offsets(
    size_t* entry_offsets, wholememory_tensor_t wholememory_tensor) {
  return entry_query("wholememory_tensor_get_entry_offsets", entry_offsets, "entry_offsets",
                     wholememory_tensor, [&](const wm::Tensor& tensor, size_t entry) {
                       if (!tensor.is_wholememory) {
                         entry_offsets[0] = 0;
                         entry_offsets[1] = static_cast<size_t>(tensor.desc.sizes[0]);
                         return;
                       }
                       write_plan_in_entries(entry_offsets, tensor, entry,
                                             &wm::PartitionPlan::offsets);
                     });
}

wholememory_error_code_t wholememory_tensor_get_entry_partition_sizes(
    size_t* entry_partition, wholememory_tensor_t wholememory_tensor) {
  return entry_query(
      "wholememory_tensor_get_entry_partition_sizes", entry_partition, "entry_partition",
      wholememory_tensor, [&](const wm::Tensor& tensor, size_t entry) {
        if (!tensor.is_wholememory) {
          entry_partition[0] = static_cast<size_t>(tensor.desc.sizes[0]);
          return;
        }
        write_plan_in_entries(entry_partition, tensor, entry, &wm::PartitionPlan::sizes);
      });
}

wholememory_error_code_t wholememory_tensor_get_local_entry_count(
    size_t* local_entry_count, wholememory_tensor_t wholememory_tensor) {
  return entry_query(
      "wholememory_tensor_get_local_entry_count", local_entry_count, "local_entry_count",
      wholememory_tensor, [&](const wm::Tensor& tensor, size_t entry) {
        *local_entry_count = tensor.is_wholememory ? memory_of(tensor)->local_size() / entry
                                                   : static_cast<size_t>(tensor.desc.sizes[0]);
      });
}

wholememory_error_code_t wholememory_tensor_get_local_entry_start(
    size_t* local_entry_start, wholememory_tensor_t wholememory_tensor) {
  return entry_query(
      "wholememory_tensor_get_local_entry_start", local_entry_start, "local_entry_start",
      wholememory_tensor, [&](const wm::Tensor& tensor, size_t entry) {
        *local_entry_start = tensor.is_wholememory ? memory_of(tensor)->local_offset() / entry : 0;
      });
}

wholememory_error_code_t wholememory_tensor_get_subtensor(
    wholememory_tensor_t wholememory_tensor, int64_t* starts, int64_t* ends,
    wholememory_tensor_t* sub_wholememory_tensor) {
  return wm::guarded("wholememory_tensor_get_subtensor", [&] {
    wm::checked_output(sub_wholememory_tensor, "sub_wholememory_tensor");
    *sub_wholememory_tensor = nullptr;
    wm::checked_output(starts, "starts");
    wm::checked_output(ends, "ends");
    const wm::Tensor tensor = wm::TensorRegistry::instance().get(wholememory_tensor);
    const int dim = tensor.desc.dim;
    if (dim < 1 || dim > 2) {
      raise(Status::kNotImplemented, "sub-tensors of " + std::to_string(dim) +
                                         "-D tensors are not implemented (1-D and 2-D are)");
    }
    wm::Tensor sub = tensor;
    sub.owns_handle = false;
    for (int i = 0; i < dim; ++i) {
      const int64_t size = tensor.desc.sizes[i];
      const int64_t start = starts[i] == -1 ? 0 : starts[i];
      const int64_t end = ends[i] == -1 ? size : ends[i];
      MEMLOOM_CHECK_ARG(start >= 0 && start < end && end <= size,
                        "dimension " + std::to_string(i) + ": [" + std::to_string(start) + ", " +
                            std::to_string(end) + ") is not a non-empty part of [0, " +
                            std::to_string(size) + ")");
      sub.desc.storage_offset += tensor.desc.strides[i] * start;
      sub.desc.sizes[i] = end - start;
    }
    *sub_wholememory_tensor = wm::TensorRegistry::instance().add(sub);
  });
}

wholememory_tensor_t wholememory_tensor_get_root(wholememory_tensor_t wholememory_tensor) {
  return wm::guarded_value<wholememory_tensor_t>("wholememory_tensor_get_root", nullptr, [&] {
    return wm::TensorRegistry::instance().get(wholememory_tensor).root;
  });
}

int64_t get_wholememory_tensor_count(void) {
  return wm::TensorRegistry::instance().count();
}

}  // extern "C"
