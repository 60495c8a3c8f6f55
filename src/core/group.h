// Group: a set of processes that know each other — ranks, nodes, collectives — built through the
// config store. WholeMemory communicators, SHM and BM objects each sit on one.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/hal/collectives.h"
#include "memloom/deadline.h"
#include "src/core/meeting_record.h"
#include "src/core/store_bootstrap.h"
#include "src/store/client.h"

namespace memloom::core {

// The timeout of collective operations when the API gives none: MEMLOOM_TIMEOUT_S (default 120 s).
std::chrono::milliseconds default_collective_timeout();

// What a group's collectives carry: kControl groups (MemFabric worlds, SHM and BM objects) only
// exchange small control messages, which a backend may serve without a device communicator
// (hal::GroupSpec::control_only); kData groups (WholeMemory communicators) move table rows.
enum class GroupTraffic { kData, kControl };

class Group {
 public:
  // Collective over `size` processes, each passing its own rank. Waits for every member until the
  // deadline; a timeout names the ranks that never arrived. Two processes claiming one rank fail.
  // With an identity (what names the group besides its prefix, meeting_record.h), a rank whose
  // peers wait under another value names both values instead of timing out. `once_met` runs when
  // every rank arrived, before the collectives start: work that may start the device goes there,
  // so that it delays no rank's arrival (a CUDA context among busy GPU processes takes seconds).
  static std::shared_ptr<Group> create(std::shared_ptr<store::Client> client,
                                       store::KeyPrefix prefix, int rank, int size,
                                       Deadline deadline,
                                       GroupTraffic traffic = GroupTraffic::kData,
                                       const std::optional<GroupIdentity>& identity = {},
                                       const std::function<void()>& once_met = {});
  ~Group();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& node_of(int rank) const { return nodes_.at(rank); }
  bool same_node(int a, int b) const { return nodes_.at(a) == nodes_.at(b); }
  // Ranks of this group on my node, ascending; my index among them.
  const std::vector<int>& local_ranks() const { return local_ranks_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return static_cast<int>(local_ranks_.size()); }
  // Nodes are numbered by their lowest rank.
  int node_count() const { return node_count_; }
  int node_index_of(int rank) const { return node_index_.at(rank); }
  bool spans_nodes() const { return node_count_ > 1; }
  int pid_of(int rank) const { return pids_.at(rank); }

  hal::Collectives& collectives() { return *collectives_; }
  hal::Bootstrap& bootstrap() { return bootstrap_; }
  store::Client& store() { return *client_; }
  std::shared_ptr<store::Client> store_ptr() { return client_; }
  const store::KeyPrefix& prefix() const { return prefix_; }

  // Collective. Ranks with equal color form a group ordered by (key, old rank); a negative color
  // returns nullptr for that rank (it still takes part in the exchange).
  std::shared_ptr<Group> split(int color, int key, Deadline deadline);
  // A sub-group of the given members (every listed member calls it with the same list; members
  // must be sorted). Non-members must not call it.
  std::shared_ptr<Group> subgroup(const std::string& name, const std::vector<int>& members,
                                  Deadline deadline);

  // Collective: every rank's string, in rank order.
  std::vector<std::string> allgather_strings(const std::string& mine, Deadline deadline);
  // Collective: throws kInvalidInput on every rank when `value` differs between ranks; the message
  // says what (`what`) and which ranks disagree with rank 0.
  void check_agreement(const std::string& what, const std::string& value, Deadline deadline);

  // Called once by each member when the object this group serves goes away: the last member to
  // do so removes the group's keys (its whole prefix) from the store, so that objects created and
  // destroyed for days leave no keys behind. Only for groups whose prefix holds no other live
  // group's keys. Best effort: a store that is gone is logged, not raised; the keys of a group
  // with a dead member stay.
  void retire() noexcept;
  // Whether split() or subgroup() ever made a group of this one: those keep their keys under this
  // group's prefix, so a group with children must not retire while they may live.
  bool has_children() const { return has_children_; }

  // A fresh key prefix for an object created collectively on this group (same on every rank as
  // long as ranks create objects in the same order).
  store::KeyPrefix next_object_prefix(const std::string& kind);

 private:
  Group(std::shared_ptr<store::Client> client, store::KeyPrefix prefix, int rank, int size);

  std::shared_ptr<store::Client> client_;
  store::KeyPrefix prefix_;
  StoreBootstrap bootstrap_;
  int rank_;
  int size_;
  GroupTraffic traffic_ = GroupTraffic::kData;  // split and subgroup groups carry the same
  bool has_children_ = false;
  std::vector<std::string> nodes_;
  std::vector<int> pids_;
  std::vector<int> local_ranks_;
  std::vector<int> node_index_;
  int local_rank_ = 0;
  int node_count_ = 0;
  uint64_t split_sequence_ = 0;
  uint64_t object_sequence_ = 0;
  std::unique_ptr<hal::Collectives> collectives_;
};

}  // namespace memloom::core
