#include "src/core/group.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/log.h"
#include "src/base/wait_reporter.h"
#include "src/core/platform_loader.h"
#include "src/store/call_deadline.h"

namespace memloom::core {
namespace {

// `other` is "SIZE\nRANK": the size that rank was given. Names both when they differ.
void check_same_size(const store::KeyPrefix& prefix, int rank, int size, const std::string& other) {
  const auto newline = other.find('\n');
  const std::string other_size = other.substr(0, newline);
  if (other_size == std::to_string(size)) return;
  const std::string other_rank = newline == std::string::npos ? "?" : other.substr(newline + 1);
  raise(Status::kInvalidInput,
        "group '" + prefix.prefix() + "': ranks disagree on the world size: rank " +
            std::to_string(rank) + " says world size " + std::to_string(size) + ", rank " +
            other_rank + " says " + other_size);
}

}  // namespace

std::chrono::milliseconds default_collective_timeout() {
  const char* value = std::getenv("MEMLOOM_TIMEOUT_S");
  if (value == nullptr || *value == '\0') return std::chrono::milliseconds(120000);
  char* end = nullptr;
  double seconds = std::strtod(value, &end);
  if (end == value || seconds <= 0) {
    raise(Status::kInvalidValue,
          std::string("MEMLOOM_TIMEOUT_S='") + value + "' is not a positive number");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

Group::Group(std::shared_ptr<store::Client> client, store::KeyPrefix prefix, int rank, int size)
    : client_(std::move(client)),
      prefix_(std::move(prefix)),
      bootstrap_(*client_, prefix_.sub("hal")),
      rank_(rank),
      size_(size) {}

Group::~Group() = default;

void Group::retire() noexcept {
  try {
    if (client_->add(prefix_("retired"), 1) >= size_) client_->remove_prefix(prefix_.prefix());
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kDebug, "leaving the keys of group '" << prefix_.prefix()
                                                      << "' in the store: " << error.what());
  }
}

std::shared_ptr<Group> Group::create(std::shared_ptr<store::Client> client, store::KeyPrefix prefix,
                                     int rank, int size, Deadline deadline, GroupTraffic traffic,
                                     const std::optional<GroupIdentity>& identity,
                                     const std::function<void()>& once_met) {
  MEMLOOM_CHECK_ARG(client != nullptr, "group needs a config store client");
  MEMLOOM_CHECK_ARG(size > 0, "group size must be positive, got " + std::to_string(size));
  MEMLOOM_CHECK_ARG(
      rank >= 0 && rank < size,
      "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(size) + ")");
  std::shared_ptr<Group> group(new Group(client, prefix, rank, size));
  const store::CallDeadlineScope store_calls(deadline);

  // Announce myself (with my size, for the ranks that arrived first); a second process claiming
  // the same rank is refused.
  const std::string node = base::Environment::read().node;
  const std::string me = node + "\n" + std::to_string(::getpid()) + "\n" + std::to_string(size);
  std::string current;
  if (!client->compare_and_swap(prefix("member/" + std::to_string(rank)), "", me, true, &current)) {
    raise(Status::kInvalidInput, "rank " + std::to_string(rank) + " of group '" + prefix.prefix() +
                                     "' was already taken by another process (" + current + ")");
  }

  // The first arrival records the size it was given, so a later one with another size is named at
  // once instead of waiting for ranks that will never come.
  const std::string my_size = std::to_string(size) + "\n" + std::to_string(rank);
  std::string recorded;
  if (!client->compare_and_swap(prefix("size"), "", my_size, true, &recorded)) {
    check_same_size(prefix, rank, size, recorded);
  }
  std::optional<MeetingRecord> meeting;
  if (identity) meeting.emplace(*client, *identity, rank);
  group->nodes_.resize(size);
  group->pids_.resize(size);
  base::WaitReporter reporter(deadline);
  auto missing_from = [&](int first) {
    std::vector<int> missing;
    for (int m = first; m < size; ++m) {
      if (!client->get(prefix("member/" + std::to_string(m)), std::chrono::milliseconds(0))) {
        missing.push_back(m);
      }
    }
    return missing;
  };
  for (int r = 0; r < size; ++r) {
    std::optional<std::string> value;
    while (true) {
      // Slices end when a report is due, so a long wait says what it waits for, and with an
      // identity often enough to hear of a peer that gave up over a disagreement.
      auto slice = std::max(reporter.next_report_in(), std::chrono::milliseconds(1));
      if (meeting) slice = std::min(slice, MeetingRecord::kPollEvery);
      value =
          client->get(prefix("member/" + std::to_string(r)), std::min(deadline.remaining(), slice));
      if (value || deadline.expired()) break;
      if (meeting) meeting->check_peer_gave_up(r);
      reporter.poll([&] {
        const auto missing = missing_from(r);
        return std::string(missing.size() == 1 ? "rank " : "ranks ") + base::rank_list(missing) +
               " (of " + std::to_string(size) + ") to arrive at the creation of group '" +
               prefix.prefix() + "'";
      });
    }
    if (!value) {
      if (meeting) meeting->check_missing_at_deadline(missing_from(r));
      raise(Status::kTimeout, "group '" + prefix.prefix() + "' (" + std::to_string(size) +
                                  " ranks): timed out waiting for rank(s) " +
                                  base::rank_list(missing_from(r), 32) +
                                  " to arrive (ranks given different unique ids or store URLs "
                                  "never meet: check that every rank got the same one)");
    }
    const auto newline = value->find('\n');
    const auto second = value->find('\n', newline + 1);
    group->nodes_[r] = value->substr(0, newline);
    group->pids_[r] = std::atoi(value->c_str() + newline + 1);
    if (second != std::string::npos) {
      check_same_size(prefix, rank, size, value->substr(second + 1) + "\n" + std::to_string(r));
    }
  }

  std::map<std::string, int> node_numbers;
  group->node_index_.resize(size);
  for (int r = 0; r < size; ++r) {
    auto inserted = node_numbers.emplace(group->nodes_[r], static_cast<int>(node_numbers.size()));
    group->node_index_[r] = inserted.first->second;
    if (group->nodes_[r] == node) {
      if (r == rank) group->local_rank_ = static_cast<int>(group->local_ranks_.size());
      group->local_ranks_.push_back(r);
    }
  }
  group->node_count_ = static_cast<int>(node_numbers.size());

  hal::GroupSpec spec;
  spec.rank = rank;
  spec.size = size;
  spec.node_of_rank = group->nodes_;
  spec.pid_of_rank = group->pids_;
  spec.control_only = traffic == GroupTraffic::kControl;
  group->traffic_ = traffic;
  if (once_met) once_met();
  group->collectives_ = platform().create_collectives(spec, group->bootstrap_, deadline);
  return group;
}

std::vector<std::string> Group::allgather_strings(const std::string& mine, Deadline deadline) {
  std::vector<uint64_t> lengths(size_);
  uint64_t my_length = mine.size();
  collectives_->allgather(&my_length, lengths.data(), sizeof(uint64_t), deadline);
  std::vector<size_t> counts(size_), displs(size_);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    counts[r] = lengths[r];
    displs[r] = total;
    total += lengths[r];
  }
  std::string all(total, '\0');
  collectives_->allgatherv(mine.data(), all.data(), counts.data(), displs.data(), deadline);
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(displs[r], counts[r]);
  return out;
}

void Group::check_agreement(const std::string& what, const std::string& value, Deadline deadline) {
  auto values = allgather_strings(value, deadline);
  std::ostringstream differing;
  int count = 0;
  for (int r = 1; r < size_; ++r) {
    if (values[r] != values[0]) differing << (count++ ? ", " : "") << r;
  }
  if (count > 0) {
    raise(Status::kInvalidInput, "ranks disagree on " + what + ": rank(s) " + differing.str() +
                                     " passed a different value than rank 0");
  }
}

std::shared_ptr<Group> Group::split(int color, int key, Deadline deadline) {
  const uint64_t sequence = split_sequence_++;
  has_children_ = true;
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * size_);
  collectives_->allgather(mine, all.data(), sizeof(mine), deadline);
  if (color < 0) return nullptr;
  std::vector<std::pair<std::pair<int, int>, int>> members;  // ((key, old rank), old rank)
  for (int r = 0; r < size_; ++r) {
    if (all[2 * r] == color) members.push_back({{all[2 * r + 1], r}, r});
  }
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == rank_) new_rank = static_cast<int>(i);
  }
  auto sub_prefix =
      prefix_.sub("split" + std::to_string(sequence)).sub("color" + std::to_string(color));
  return Group::create(client_, sub_prefix, new_rank, static_cast<int>(members.size()), deadline,
                       traffic_);
}

std::shared_ptr<Group> Group::subgroup(const std::string& name, const std::vector<int>& members,
                                       Deadline deadline) {
  auto it = std::find(members.begin(), members.end(), rank_);
  MEMLOOM_CHECK_ARG(it != members.end(),
                    "rank " + std::to_string(rank_) + " is not a member of sub-group " + name);
  has_children_ = true;
  return Group::create(client_, prefix_.sub("sub-" + name), static_cast<int>(it - members.begin()),
                       static_cast<int>(members.size()), deadline, traffic_);
}

store::KeyPrefix Group::next_object_prefix(const std::string& kind) {
  return prefix_.sub(kind + std::to_string(object_sequence_++));
}

}  // namespace memloom::core
