// Which Transport a backend hands to its users across nodes (BM copies to other nodes):
// MEMLOOM_TRANSPORT=tcp (the default: memloom's own pipelined TCP endpoint) or ucx (the UCX
// transport, hw/host/ucx_transport.h). TCP stays the default while UCX 1.13 over TCP is both slower
// here and able to abort a serving process whose peer's links are cut (README, "The UCX
// transport").
#pragma once

namespace memloom::host {

enum class TransportKind { kTcp, kUcx };

// From MEMLOOM_TRANSPORT; an unknown value is kInvalidInput naming it and the accepted ones.
TransportKind chosen_transport();

const char* transport_name(TransportKind kind);

}  // namespace memloom::host
