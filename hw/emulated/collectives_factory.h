// Factories of the emulated backend's Collectives (shared-memory atomics inside a node, ZeroMQ
// across emulated nodes) and Transport (TCP), called by the emulated Platform.
#pragma once

#include <memory>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "hw/hal/transport.h"
#include "memloom/deadline.h"

namespace memloom::emulated {

std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                     hal::Bootstrap& bootstrap, Deadline deadline);
std::unique_ptr<hal::Transport> create_transport();

}  // namespace memloom::emulated
