// HIERARCHY gather and scatter across nodes. Every rank maps the partitions of its own node, so
// rows only need to cross nodes once per distinct entry:
//   1. inside the node, each rank sends its indices to the node's gateway for the owner's node
//      (local rank = owner's node % ranks on my node), over the local communicator: routed on the
//      device (device_routing.h, keys = global entries) and exchanged between device buffers;
//   2. the gateway de-duplicates them on the host (distinct entries, usually far fewer) and asks
//      one rank of the owner's node for each distinct entry (over the whole communicator), which
//      reads it from its node-wide mapping;
//   3. rows come back the same way (gather), or go out the same way (scatter).
//
// Phases in the debug trace (base::PhaseTrace): counting (the count kernel and its read-back),
// routing (placing requests in the gateways' buckets, enqueued), agreement, request exchange
// (inside the node, then the keys copied to the host; scatter packs its rows meanwhile), scatter:
// row exchange (inside the node), de-duplication, cross-node requests (scatter: with packing the
// distinct rows), gather: serving (reading the asked rows of my node's mapping), cross-node rows,
// gather: row exchange (the gateway's answers back inside the node), then placing rows (gather:
// into the output) or writing rows (scatter: into my node's mapping).
#include "memloom/error.h"
#include "src/wholememory/ops/distinct_entries.h"
#include "src/wholememory/ops/exchange_run.h"
#include "src/wholememory/ops/request_round.h"

namespace memloom::wholememory {
namespace {

// The context of one cross-node operation.
struct Hierarchy {
  core::Group& world;
  core::Group& local;
  EntryLayout layout;
  std::vector<std::vector<int>> ranks_of_node;

  Hierarchy(const ExchangeOperands& operands, Communicator& local_comm)
      : world(operands.memory->comm().group()),
        local(local_comm.group()),
        layout(*operands.memory, operands.table.entry_bytes()),
        ranks_of_node(world.node_count()) {
    for (int r = 0; r < world.size(); ++r) ranks_of_node[world.node_index_of(r)].push_back(r);
  }

  int gateway_for(int node) const { return node % local.size(); }
  // Stage 1: requests for a rank's entries go to my node's gateway for that rank's node, as the
  // global entry.
  RouteTargets gateways() const {
    RouteTargets targets;
    for (int r = 0; r < world.size(); ++r) {
      targets.destination_of_owner.push_back(gateway_for(world.node_index_of(r)));
    }
    targets.destinations = local.size();
    targets.global_keys = true;
    return targets;
  }
  // The rank of `node` that my gateway role asks (spreads gateways over that node's ranks).
  int server_on(int node) const {
    const auto& ranks = ranks_of_node[node];
    return ranks[local.rank() % static_cast<int>(ranks.size())];
  }
};

// Stage 1's keys, from the placed buckets to the gateways; a gateway de-duplicates the keys it
// received on the host, so they come down once.
std::vector<int64_t> exchange_gateway_keys(ExchangeWork& work, BucketedRound& inside,
                                           const OwnerRoute& route, Deadline deadline) {
  TempMemory* received = work.device_buffer(inside.received_count() * sizeof(int64_t));
  work.synchronize();  // the keys are placed (and, for a scatter, the rows packed)
  inside.exchange_keys(route.keys()->as<int64_t>(), received->as<int64_t>(), deadline);
  std::vector<int64_t> keys(inside.received_count());
  work.read_back(keys.data(), received->data(), keys.size() * sizeof(int64_t));
  return keys;
}

// The cross-node requests of a gateway: distinct entry u goes to a rank of its node, as the
// entry's position in that node's mapping. The entries ascend, so one pass walks the partitions
// alongside them (three binary searches and a scan of the ranks per entry took 15-35 ms for a
// million entries on the 2-core VM).
void route_to_servers(const DistinctEntries& distinct, Hierarchy& hierarchy,
                      std::vector<int64_t>* keys, std::vector<int>* destinations) {
  const auto& offsets = hierarchy.layout.offsets();
  const int ranks = hierarchy.world.size();
  // Per rank: where its partition starts in its node's range, and whom my gateway role asks there.
  std::vector<int64_t> node_start(ranks);
  std::vector<int> server(ranks);
  std::vector<int64_t> node_filled(hierarchy.world.node_count(), 0);
  for (int r = 0; r < ranks; ++r) {
    const int node = hierarchy.world.node_index_of(r);
    node_start[r] = node_filled[node];
    node_filled[node] += offsets[r + 1] - offsets[r];
    server[r] = hierarchy.server_on(node);
  }
  if (!distinct.entries.empty() && distinct.entries.back() >= offsets.back()) {
    raise(Status::kLogic, "HIERARCHY gateway: entry " + std::to_string(distinct.entries.back()) +
                              " is past the table's " + std::to_string(offsets.back()));
  }
  keys->reserve(keys->size() + distinct.entries.size());
  destinations->reserve(destinations->size() + distinct.entries.size());
  int owner = 0;
  for (int64_t entry : distinct.entries) {
    while (entry >= offsets[owner + 1]) ++owner;  // passes over empty partitions too
    keys->push_back(node_start[owner] + entry - offsets[owner]);
    destinations->push_back(server[owner]);
  }
}

// My node's partitions as one matrix of the table's columns (rows are node-wide entries).
kernels::RowTable node_range(const ExchangeOperands& operands, const Hierarchy& hierarchy) {
  void* base = nullptr;
  const int first = hierarchy.world.local_ranks().front();
  if (!operands.memory->rank_pointer(first, &base)) {
    raise(Status::kLogic,
          "HIERARCHY memory does not map rank " + std::to_string(first) + " of this node");
  }
  MatrixShape node = operands.table;
  node.offset = operands.table.column_offset();
  return contiguous_table(base, node);
}

// Runs body(run, hierarchy) under exchange_run.h's prologue, routing to my node's gateways and
// holding the local communicator too, which the body exchanges over.
template <typename Body>
void run_across_nodes(const ExchangeOperands& operands, Direction direction, Body&& body) {
  auto local_comm = operands.memory->local_comm();
  if (!local_comm) raise(Status::kLogic, "HIERARCHY memory without a local communicator");
  Hierarchy hierarchy(operands, *local_comm);
  const RouteTargets gateways = hierarchy.gateways();
  run_exchange(
      operands, direction, "HIERARCHY", hierarchy.layout, &gateways,
      [&](const ExchangeRun& run) { body(run, hierarchy); }, local_comm->collective_mutex());
}

// The entries of my node's range, the bound of a row copy over node_range().
int64_t my_node_entries(const ExchangeOperands& operands, Hierarchy& hierarchy) {
  const int node = hierarchy.world.node_index_of(operands.memory->comm().rank());
  return hierarchy.layout.node_entries(node, hierarchy.world);
}

}  // namespace

void hierarchy_gather(const ExchangeOperands& operands) {
  run_across_nodes(operands, Direction::kGather, [&](const ExchangeRun& run, Hierarchy& hierarchy) {
    ExchangeWork& work = run.work;
    // 1. Indices to the gateways of my node.
    BucketedRound inside(hierarchy.local.collectives(), run.route.sent_per_rank(), run.deadline);
    const std::vector<int64_t> received =
        exchange_gateway_keys(work, inside, run.route, run.deadline);
    run.trace.mark("request exchange");
    // 2. As a gateway: each distinct entry once, to a rank of its node.
    const DistinctEntries distinct = distinct_entries(received);
    std::vector<int64_t> server_keys;
    std::vector<int> servers;
    route_to_servers(distinct, hierarchy, &server_keys, &servers);
    run.trace.mark("de-duplication");
    RequestRound across(hierarchy.world.collectives(), server_keys, servers, run.deadline);
    run.trace.mark("cross-node requests");
    // As a server: read the asked entries from my node's mapping.
    TempMemory* asked = work.upload(across.received());
    TempMemory* served = work.device_buffer(across.received().size() * run.row_bytes);
    work.copy_rows(Direction::kGather, node_range(operands, hierarchy), run.packed(served), asked,
                   across.received().size(), my_node_entries(operands, hierarchy));
    work.synchronize();
    run.trace.mark("serving");
    TempMemory* distinct_rows = work.device_buffer(across.sent_count() * run.row_bytes);
    across.respond(served->data(), distinct_rows->data(), run.row_bytes, run.deadline);
    run.trace.mark("cross-node rows");
    // 3. As a gateway: one row per key received inside the node, back to its sender.
    std::vector<int64_t> slot_of_key;
    slot_of_key.reserve(distinct.of_received.size());
    for (int64_t u : distinct.of_received) slot_of_key.push_back(across.slot_of_request()[u]);
    TempMemory* keys_slots = work.upload(std::move(slot_of_key));
    TempMemory* answers_inside = work.device_buffer(received.size() * run.row_bytes);
    work.copy_rows(Direction::kGather, run.packed(distinct_rows), run.packed(answers_inside),
                   keys_slots, received.size(), static_cast<int64_t>(across.sent_count()));
    work.synchronize();
    TempMemory* answers = work.device_buffer(inside.sent_count() * run.row_bytes);
    inside.respond(answers_inside->data(), answers->data(), run.row_bytes, run.deadline);
    run.trace.mark("row exchange");
    // Output row i takes the answer in its request's slot; skipped rows keep their contents.
    work.copy_rows(Direction::kGather, run.packed(answers), operands.rows, run.route.slot_of_row(),
                   static_cast<size_t>(operands.indices.count),
                   static_cast<int64_t>(inside.sent_count()));
    work.synchronize();
    run.trace.mark("placing rows");
  });
}

void hierarchy_scatter(const ExchangeOperands& operands) {
  run_across_nodes(
      operands, Direction::kScatter, [&](const ExchangeRun& run, Hierarchy& hierarchy) {
        ExchangeWork& work = run.work;
        // 1. Keys and rows (converted to the table's type) to the gateways of my node.
        BucketedRound inside(hierarchy.local.collectives(), run.route.sent_per_rank(),
                             run.deadline);
        TempMemory* outgoing = work.device_buffer(inside.sent_count() * run.row_bytes);
        work.copy_rows(Direction::kGather, operands.rows, run.packed(outgoing),
                       run.route.row_in_slot(), inside.sent_count(), operands.indices.count);
        const std::vector<int64_t> received =
            exchange_gateway_keys(work, inside, run.route, run.deadline);
        TempMemory* gathered = work.device_buffer(received.size() * run.row_bytes);
        run.trace.mark("request exchange");
        inside.forward(outgoing->data(), gathered->data(), run.row_bytes, run.deadline);
        run.trace.mark("row exchange");
        // 2. As a gateway: one row per distinct entry (the last one received wins), to its node.
        const DistinctEntries distinct = distinct_entries(received);
        std::vector<int64_t> key_of_distinct(distinct.entries.size());
        for (size_t k = 0; k < distinct.of_received.size(); ++k) {
          key_of_distinct[distinct.of_received[k]] = static_cast<int64_t>(k);
        }
        std::vector<int64_t> server_keys;
        std::vector<int> servers;
        route_to_servers(distinct, hierarchy, &server_keys, &servers);
        run.trace.mark("de-duplication");
        RequestRound across(hierarchy.world.collectives(), server_keys, servers, run.deadline);
        std::vector<int64_t> key_in_slot(across.sent_count());
        for (size_t slot = 0; slot < key_in_slot.size(); ++slot) {
          key_in_slot[slot] = key_of_distinct[across.request_in_slot()[slot]];
        }
        TempMemory* keys_of_slots = work.upload(std::move(key_in_slot));
        TempMemory* crossing = work.device_buffer(across.sent_count() * run.row_bytes);
        work.copy_rows(Direction::kGather, run.packed(gathered), run.packed(crossing),
                       keys_of_slots, across.sent_count(), static_cast<int64_t>(received.size()));
        work.synchronize();
        TempMemory* arrived = work.device_buffer(across.received().size() * run.row_bytes);
        run.trace.mark("cross-node requests");
        across.forward(crossing->data(), arrived->data(), run.row_bytes, run.deadline);
        run.trace.mark("cross-node rows");
        // 3. As a server: write them into my node's mapping.
        TempMemory* targets = work.upload(across.received());
        work.copy_rows(Direction::kScatter, run.packed(arrived), node_range(operands, hierarchy),
                       targets, across.received().size(), my_node_entries(operands, hierarchy));
        work.synchronize();
        run.trace.mark("writing rows");
      });
}

}  // namespace memloom::wholememory
