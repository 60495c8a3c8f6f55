// Which Transport a backend hands to its users across nodes (BM copies to other nodes):
// MEMLOOM_TRANSPORT=tcp (the default: memloom's own pipelined TCP endpoint) or ucx (the UCX
// transport, hw/host/ucx_transport.h). TCP stays the default while UCX 1.13 over TCP is both slower
// here and able to abort a serving process whose peer's links are cut (README, "The UCX
// transport"). A caller that asks for RDMA (hal::TransportRequest::kRdma: MemFabric's ROCE / RDMA
// data operations) gets UCX whatever the variable says.
#pragma once

#include "hw/hal/transport.h"

namespace memloom::host {

enum class TransportKind { kTcp, kUcx };

// From MEMLOOM_TRANSPORT; an unknown value is kInvalidInput naming it and the accepted ones.
TransportKind chosen_transport();

// The kind a request opens: kRdma is UCX, kConfigured is chosen_transport().
TransportKind transport_for(hal::TransportRequest request);

const char* transport_name(TransportKind kind);

// MEMLOOM_TRANSPORT's choice and where it came from, plus what the UCX found here offers.
hal::TransportSupport transport_support();

}  // namespace memloom::host
