// The part that DISTRIBUTED and HIERARCHY gather and scatter share before any row moves, kept in
// one place so that both memory types route, agree and fail the same way: the indices are counted
// and routed on the device, the ranks agree on the operation (a bad index on any rank fails all of
// them there), and only then does the operation's own body exchange rows, with the peers told
// when it fails.
//
// Phases in the debug trace (base::PhaseTrace), before the body's own: counting (the count kernel
// and its read-back), routing (placing requests in their destinations' buckets, enqueued),
// agreement.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "src/base/phase_trace.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/ops/device_routing.h"
#include "src/wholememory/ops/exchange_op.h"

namespace memloom::wholememory {

// What the body of an exchanging operation works with once every rank has agreed to it.
struct ExchangeRun {
  const ExchangeOperands& operands;
  ExchangeWork& work;
  OwnerRoute& route;  // placed
  base::PhaseTrace& trace;
  Deadline deadline;
  size_t row_bytes;  // one row of the table's columns and type

  // `buffer` as rows of the table's columns and type, back to back (an exchange buffer).
  kernels::RowTable packed(const TempMemory* buffer) const {
    return packed_table(buffer->data(), operands.table.columns, operands.table.dtype);
  }
};

// Runs the gather or scatter of `operands` on `memory_type` ("DISTRIBUTED", "HIERARCHY"): routes
// its indices by `layout` to `targets` (to the entries' owners when null), agrees with the other
// ranks while holding the table's communicator and `other_mutexes` (the collective mutexes of the
// other communicators the body exchanges over), then runs body(const ExchangeRun&).
template <typename Body, typename... Mutexes>
void run_exchange(const ExchangeOperands& operands, Direction direction, const char* memory_type,
                  const EntryLayout& layout, const RouteTargets* targets, Body&& body,
                  Mutexes&... other_mutexes) {
  const bool gather = direction == Direction::kGather;
  const char* operation = gather ? "wholememory_gather" : "wholememory_scatter";
  auto& comm = operands.memory->comm();
  base::PhaseTrace trace(std::string(operation) + " (" + memory_type + ")");
  ExchangeWork work(operands);
  OwnerRoute route(work, operands, layout, targets);
  trace.mark("counting");
  // Placed while the ranks agree; a list with a bad index fails in the agreement.
  if (route.first_bad() < 0) route.place(!gather);
  trace.mark("routing");
  const auto& table = operands.table;
  const size_t row_bytes = static_cast<size_t>(table.columns) * table.element_bytes();

  std::scoped_lock lock(comm.collective_mutex(), other_mutexes...);
  const Deadline deadline = collective_deadline();
  join_exchange(operands, operation, route.first_bad(), deadline);
  trace.mark("agreement");
  const ExchangeRun run{operands, work, route, trace, deadline, row_bytes};
  abort_peers_on_failure(comm.group(), [&] { body(run); });
}

}  // namespace memloom::wholememory
