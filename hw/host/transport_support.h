// What the one cross-node transport (the UCX transport, hw/host/ucx_transport.h) finds here, for
// memloom-info and MemFabric's data-operation queries.
#pragma once

#include "hw/hal/transport.h"

namespace memloom::host {

// The UCX found at run time: version, resources, RDMA, CUDA memory support and the data path.
hal::TransportSupport transport_support();

}  // namespace memloom::host
