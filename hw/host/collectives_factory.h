// The host collectives both backends build on: shared-memory atomics among the group's members
// on one node, ZeroMQ between nodes. The emulated backend uses them for every group; the CUDA
// backend where NCCL cannot serve (ranks sharing a GPU) and to check that ranks agree.
#pragma once

#include <memory>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "memloom/deadline.h"

namespace memloom::host {

std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                     hal::Bootstrap& bootstrap, Deadline deadline);

}  // namespace memloom::host
