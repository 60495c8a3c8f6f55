// The config store of a job whose launcher runs none (torchrun, mpirun, srun): rank 0 serves it
// at the address every rank derives from the launcher's variables (base::detect_launch).
#pragma once

#include <memory>

#include "src/base/launcher_detection.h"
#include "src/store/server.h"

namespace memloom::store {

// Starts the store `launch` names on this host: on the wildcard address of the URL's family (the
// other ranks reach it by a name or address this host may not bind), on loopback when the URL is
// a loopback one. Throws kCommunication naming the address and what to change when it cannot.
std::unique_ptr<Server> serve_launch_store(const base::LaunchInfo& launch);

}  // namespace memloom::store
