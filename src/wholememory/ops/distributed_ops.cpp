// DISTRIBUTED gather and scatter: each rank maps only its own partition, so indices are bucketed
// by the rank owning their entry (on the device, device_routing.h), exchanged (alltoallv), served
// by the owner from its partition, and rows travel back (gather) or along (scatter); the slot each
// row's request took restores the caller's order.
#include <mutex>

#include "src/base/phase_trace.h"
#include "src/wholememory/ops/device_routing.h"
#include "src/wholememory/ops/exchange_op.h"
#include "src/wholememory/ops/request_round.h"

namespace memloom::wholememory {
namespace {

// My partition as a matrix of the table's columns (rows are local entries).
kernels::RowTable local_partition(const ExchangeOperands& operands) {
  MatrixShape local = operands.table;
  local.offset = operands.table.column_offset();
  return contiguous_table(operands.memory->local_pointer(), local);
}

}  // namespace

// Phases in the debug trace (base::PhaseTrace): counting (the count kernel and its read-back),
// routing (placing requests in the owners' buckets, enqueued), agreement, request exchange (the
// counts, then the keys once placed; scatter packs its rows meanwhile), serving (gather: reading
// the asked rows of my partition), row exchange, then placing rows (gather: into the output) or
// writing rows (scatter: into my partition).
void distributed_gather(const ExchangeOperands& operands) {
  const auto& table = operands.table;
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, table.entry_bytes());
  base::PhaseTrace trace("wholememory_gather (DISTRIBUTED)");
  ExchangeWork work(operands);
  OwnerRoute route(work, operands, layout);
  trace.mark("counting");
  // Placed while the ranks agree; a list with a bad index fails in the agreement.
  if (route.first_bad() < 0) route.place(false);
  trace.mark("routing");
  const size_t row_bytes = static_cast<size_t>(table.columns) * table.element_bytes();

  std::lock_guard<std::mutex> lock(comm.collective_mutex());
  const Deadline deadline = collective_deadline();
  join_exchange(operands, "wholememory_gather", route.first_bad(), deadline);
  trace.mark("agreement");
  abort_peers_on_failure(comm.group(), [&] {
    BucketedRound round(comm.group().collectives(), route.sent_per_rank(), deadline);
    TempMemory* asked = work.device_buffer(round.received_count() * sizeof(int64_t));
    work.synchronize();  // the keys are placed
    round.exchange_keys(route.keys()->as<int64_t>(), asked->as<int64_t>(), deadline);
    trace.mark("request exchange");
    // Serve the entries other ranks asked me for.
    TempMemory* served = work.device_buffer(round.received_count() * row_bytes);
    work.copy_rows(Direction::kGather, local_partition(operands),
                   packed_table(served->data(), table.columns, table.dtype), asked,
                   round.received_count(), layout.local_entries(comm.rank()));
    work.synchronize();
    trace.mark("serving");
    TempMemory* answers = work.device_buffer(round.sent_count() * row_bytes);
    round.respond(served->data(), answers->data(), row_bytes, deadline);
    trace.mark("row exchange");

    // Output row i takes the answer in its request's slot; skipped rows keep their contents.
    work.copy_rows(Direction::kGather, packed_table(answers->data(), table.columns, table.dtype),
                   operands.rows, route.slot_of_row(), static_cast<size_t>(operands.indices.count),
                   static_cast<int64_t>(round.sent_count()));
    work.synchronize();
    trace.mark("placing rows");
  });
}

void distributed_scatter(const ExchangeOperands& operands) {
  const auto& table = operands.table;
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, table.entry_bytes());
  base::PhaseTrace trace("wholememory_scatter (DISTRIBUTED)");
  ExchangeWork work(operands);
  OwnerRoute route(work, operands, layout);
  trace.mark("counting");
  if (route.first_bad() < 0) route.place(true);
  trace.mark("routing");
  const size_t row_bytes = static_cast<size_t>(table.columns) * table.element_bytes();

  std::lock_guard<std::mutex> lock(comm.collective_mutex());
  const Deadline deadline = collective_deadline();
  join_exchange(operands, "wholememory_scatter", route.first_bad(), deadline);
  trace.mark("agreement");
  abort_peers_on_failure(comm.group(), [&] {
    BucketedRound round(comm.group().collectives(), route.sent_per_rank(), deadline);
    // Pack my input rows in slot order, converted to the table's element type.
    TempMemory* outgoing = work.device_buffer(round.sent_count() * row_bytes);
    work.copy_rows(Direction::kGather, operands.rows,
                   packed_table(outgoing->data(), table.columns, table.dtype), route.row_in_slot(),
                   round.sent_count(), operands.indices.count);
    TempMemory* targets = work.device_buffer(round.received_count() * sizeof(int64_t));
    work.synchronize();  // the keys are placed and the rows packed
    round.exchange_keys(route.keys()->as<int64_t>(), targets->as<int64_t>(), deadline);
    trace.mark("request exchange");
    TempMemory* incoming = work.device_buffer(round.received_count() * row_bytes);
    round.forward(outgoing->data(), incoming->data(), row_bytes, deadline);
    trace.mark("row exchange");

    // Write the rows other ranks sent me into my partition.
    work.copy_rows(Direction::kScatter, packed_table(incoming->data(), table.columns, table.dtype),
                   local_partition(operands), targets, round.received_count(),
                   layout.local_entries(comm.rank()));
    work.synchronize();
    trace.mark("writing rows");
  });
}

}  // namespace memloom::wholememory
