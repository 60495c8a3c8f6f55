// Export and import of device-memory ranges between processes of one node, for the CUDA memory
// domain's export_device_range / import_device_range (hw/hal/memory_domain.h).
//
// Two kinds of allocation are exported, each the way CUDA allows:
// - legacy allocations (cudaMalloc, cuMemAlloc): a CUDA IPC handle of the allocation's base, plus
//   the range's offset in it; the importer opens it with cudaIpcOpenMemHandle (peer access enabled
//   lazily) and closes it with cudaIpcCloseMemHandle;
// - VMM allocations (cuMemCreate with POSIX fd handles, like memloom's own segments): the
//   allocation handle exported as a file descriptor; the importer imports it, maps the whole
//   allocation into address space of its own and grants its devices access.
// A range must lie inside one allocation: one that spans several (adjacent VMM mappings of a
// global address range) is not exported, and the caller keeps its other data path for it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "hw/cuda/vmm_va_range.h"
#include "hw/hal/memory_domain.h"

namespace memloom::cuda {

// std::nullopt when [address, address+size) is not device memory or not inside one exportable
// allocation. `current_device`: a device whose context the queries run under.
std::optional<hal::ExportedSegment> export_device_range(const void* address, size_t size,
                                                        int current_device);

// Maps an exported range into this process. `current_device` opens legacy handles (the driver
// enables its peer access to the owner); VMM mappings are granted to every device of `access`
// that can reach the owner. `granularity` aligns the address reservation.
std::unique_ptr<hal::ImportedRange> import_device_range(
    hal::ExportedSegment exported, const std::shared_ptr<const DeviceAccess>& access,
    int current_device, size_t granularity);

}  // namespace memloom::cuda
