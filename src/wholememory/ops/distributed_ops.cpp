// DISTRIBUTED gather and scatter: each rank maps only its own partition, so indices are bucketed
// by the rank owning their entry, exchanged (alltoallv), served by the owner from its partition,
// and rows travel back (gather) or along (scatter); positions remembered on the way restore the
// caller's order.
#include <mutex>

#include "src/core/phase_trace.h"
#include "src/wholememory/ops/exchange_op.h"
#include "src/wholememory/ops/request_round.h"

namespace memloom::wholememory {
namespace {

// Requests go to the rank owning the entry and name its local entry there.
RowRequests route_to_owners(const std::vector<int64_t>& indices, const MatrixShape& table,
                            const EntryLayout& layout) {
  return route_rows(indices, table.rows, table.first_entry(),
                    [&](int64_t entry, int64_t* key, int* destination) {
                      *key = layout.local_entry(entry);
                      *destination = layout.owner(entry);
                    });
}

// My partition as a matrix of the table's columns (rows are local entries).
ops::RowTable local_partition(const ExchangeOperands& operands) {
  MatrixShape local = operands.table;
  local.offset = operands.table.column_offset();
  return contiguous_table(operands.memory->local_pointer(), local);
}

}  // namespace

void distributed_gather(const ExchangeOperands& operands) {
  const auto& table = operands.table;
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, table.entry_bytes());
  core::PhaseTrace trace("wholememory_gather (DISTRIBUTED)");
  ExchangeWork work(operands);
  const auto indices = work.indices_on_host();
  trace.mark("indices to host");
  const RowRequests requests = route_to_owners(indices, table, layout);
  trace.mark("routing");
  const size_t row_bytes = static_cast<size_t>(table.columns) * table.element_bytes();

  std::lock_guard<std::mutex> lock(comm.collective_mutex());
  const Deadline deadline = collective_deadline();
  join_exchange(operands, "wholememory_gather", requests.first_bad, deadline);
  trace.mark("agreement");
  abort_peers_on_failure(comm.group(), [&] {
    RequestRound round(comm.group().collectives(), requests.keys, requests.destinations, deadline);
    trace.mark("request exchange");
    // Serve the entries other ranks asked me for.
    TempMemory* asked = work.upload(round.received());
    TempMemory* served = work.device_buffer(round.received().size() * row_bytes);
    work.copy_rows(Direction::kGather, local_partition(operands),
                   packed_table(served->data(), table.columns, table.dtype), asked,
                   round.received().size(), layout.local_entries(comm.rank()));
    work.synchronize();
    trace.mark("serving");
    TempMemory* answers = work.device_buffer(round.sent_count() * row_bytes);
    round.respond(served->data(), answers->data(), row_bytes, deadline);
    trace.mark("row exchange");

    // Output row i takes the answer in its request's slot; skipped rows keep their contents.
    TempMemory* slots = work.upload(requests.slot_of_row(round, indices.size()));
    work.copy_rows(Direction::kGather, packed_table(answers->data(), table.columns, table.dtype),
                   operands.rows, slots, indices.size(), static_cast<int64_t>(round.sent_count()));
    work.synchronize();
    trace.mark("placing rows");
  });
}

void distributed_scatter(const ExchangeOperands& operands) {
  const auto& table = operands.table;
  auto& comm = operands.memory->comm();
  const EntryLayout layout(*operands.memory, table.entry_bytes());
  ExchangeWork work(operands);
  const auto indices = work.indices_on_host();
  const RowRequests requests = route_to_owners(indices, table, layout);
  const size_t row_bytes = static_cast<size_t>(table.columns) * table.element_bytes();

  std::lock_guard<std::mutex> lock(comm.collective_mutex());
  const Deadline deadline = collective_deadline();
  join_exchange(operands, "wholememory_scatter", requests.first_bad, deadline);
  abort_peers_on_failure(comm.group(), [&] {
    RequestRound round(comm.group().collectives(), requests.keys, requests.destinations, deadline);
    // Pack my input rows in slot order, converted to the table's element type.
    TempMemory* rows_of_slots = work.upload(requests.row_in_slot(round));
    TempMemory* outgoing = work.device_buffer(round.sent_count() * row_bytes);
    work.copy_rows(Direction::kGather, operands.rows,
                   packed_table(outgoing->data(), table.columns, table.dtype), rows_of_slots,
                   round.sent_count(), operands.indices.count);
    work.synchronize();
    TempMemory* incoming = work.device_buffer(round.received().size() * row_bytes);
    round.forward(outgoing->data(), incoming->data(), row_bytes, deadline);

    // Write the rows other ranks sent me into my partition.
    TempMemory* targets = work.upload(round.received());
    work.copy_rows(Direction::kScatter, packed_table(incoming->data(), table.columns, table.dtype),
                   local_partition(operands), targets, round.received().size(),
                   layout.local_entries(comm.rank()));
    work.synchronize();
  });
}

}  // namespace memloom::wholememory
