// The host collectives both backends build on: shared-memory atomics among the group's members
// on one node, ZeroMQ between nodes. The emulated backend uses them for every group; the CUDA
// backend where NCCL cannot serve (ranks sharing a GPU) and to check that ranks agree.
#pragma once

#include <memory>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "hw/host/buffer_staging.h"
#include "memloom/deadline.h"

namespace memloom::host {

// `staging` (may be null): how the collectives reach buffers the CPU cannot touch.
std::unique_ptr<hal::Collectives> create_collectives(
    const hal::GroupSpec& group, hal::Bootstrap& bootstrap, Deadline deadline,
    std::unique_ptr<BufferStaging> staging = nullptr);

}  // namespace memloom::host
