// DISTRIBUTED gather and scatter: each rank maps only its own partition, so indices are bucketed
// by the rank owning their entry (on the device, device_routing.h), exchanged (alltoallv), served
// by the owner from its partition, and rows travel back (gather) or along (scatter); the slot each
// row's request took restores the caller's order.
#include "src/wholememory/ops/exchange_run.h"
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

// Phases in the debug trace (base::PhaseTrace), after exchange_run.h's: request exchange (the
// counts, then the keys once placed; scatter packs its rows meanwhile), serving (gather: reading
// the asked rows of my partition), row exchange, then placing rows (gather: into the output) or
// writing rows (scatter: into my partition).
void distributed_gather(const ExchangeOperands& operands) {
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, operands.table.entry_bytes());
  run_exchange(
      operands, Direction::kGather, "DISTRIBUTED", layout, nullptr, [&](const ExchangeRun& run) {
        BucketedRound round(comm.group().collectives(), run.route.sent_per_rank(), run.deadline);
        TempMemory* asked = run.work.device_buffer(round.received_count() * sizeof(int64_t));
        run.work.synchronize();  // the keys are placed
        round.exchange_keys(run.route.keys()->as<int64_t>(), asked->as<int64_t>(), run.deadline);
        run.trace.mark("request exchange");
        // Serve the entries other ranks asked me for.
        TempMemory* served = run.work.device_buffer(round.received_count() * run.row_bytes);
        run.work.copy_rows(Direction::kGather, local_partition(operands), run.packed(served), asked,
                           round.received_count(), layout.local_entries(comm.rank()));
        run.work.synchronize();
        run.trace.mark("serving");
        TempMemory* answers = run.work.device_buffer(round.sent_count() * run.row_bytes);
        round.respond(served->data(), answers->data(), run.row_bytes, run.deadline);
        run.trace.mark("row exchange");

        // Output row i takes the answer in its request's slot; skipped rows keep their contents.
        run.work.copy_rows(Direction::kGather, run.packed(answers), operands.rows,
                           run.route.slot_of_row(), static_cast<size_t>(operands.indices.count),
                           static_cast<int64_t>(round.sent_count()));
        run.work.synchronize();
        run.trace.mark("placing rows");
      });
}

void distributed_scatter(const ExchangeOperands& operands) {
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, operands.table.entry_bytes());
  run_exchange(
      operands, Direction::kScatter, "DISTRIBUTED", layout, nullptr, [&](const ExchangeRun& run) {
        BucketedRound round(comm.group().collectives(), run.route.sent_per_rank(), run.deadline);
        // Pack my input rows in slot order, converted to the table's element type.
        TempMemory* outgoing = run.work.device_buffer(round.sent_count() * run.row_bytes);
        run.work.copy_rows(Direction::kGather, operands.rows, run.packed(outgoing),
                           run.route.row_in_slot(), round.sent_count(), operands.indices.count);
        TempMemory* targets = run.work.device_buffer(round.received_count() * sizeof(int64_t));
        run.work.synchronize();  // the keys are placed and the rows packed
        round.exchange_keys(run.route.keys()->as<int64_t>(), targets->as<int64_t>(), run.deadline);
        run.trace.mark("request exchange");
        TempMemory* incoming = run.work.device_buffer(round.received_count() * run.row_bytes);
        round.forward(outgoing->data(), incoming->data(), run.row_bytes, run.deadline);
        run.trace.mark("row exchange");

        // Write the rows other ranks sent me into my partition.
        run.work.copy_rows(Direction::kScatter, run.packed(incoming), local_partition(operands),
                           targets, round.received_count(), layout.local_entries(comm.rank()));
        run.work.synchronize();
        run.trace.mark("writing rows");
      });
}

}  // namespace memloom::wholememory
