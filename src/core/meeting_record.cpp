#include "src/core/meeting_record.h"

#include <chrono>

#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::core {
namespace {

// A record is "<state>\n<value>"; the state says whether its rank still waits.
constexpr const char* kWaiting = "waiting";
constexpr const char* kGaveUp = "gave-up";

std::string slot(int rank) {
  return "rank" + std::to_string(rank);
}

}  // namespace

MeetingRecord::MeetingRecord(store::Client& client, GroupIdentity identity, int rank)
    : client_(client), identity_(std::move(identity)), rank_(rank) {
  client_.set(identity_.place(slot(rank_)), std::string(kWaiting) + "\n" + identity_.value);
}

MeetingRecord::~MeetingRecord() {
  if (gave_up_) return;
  try {
    client_.remove(identity_.place(slot(rank_)));
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kDebug, "leaving the meeting record of rank " << rank_ << " under '"
                                                              << identity_.place.prefix()
                                                              << "': " << error.what());
  }
}

bool MeetingRecord::read(int rank, Peer* peer) {
  std::optional<std::string> record;
  try {
    record = client_.get(identity_.place(slot(rank)), std::chrono::milliseconds(0));
  } catch (const Error&) {
    return false;
  }
  if (!record) return false;
  const auto newline = record->find('\n');
  if (newline == std::string::npos) return false;
  peer->gave_up = record->compare(0, newline, kGaveUp) == 0;
  peer->value = record->substr(newline + 1);
  return true;
}

void MeetingRecord::raise_disagreement(int peer, const std::string& theirs) const {
  raise(Status::kInvalidInput, "ranks disagree on the " + identity_.what + ": rank " +
                                   std::to_string(rank_) + " says " + identity_.what + " " +
                                   identity_.value + ", rank " + std::to_string(peer) + " says " +
                                   theirs);
}

void MeetingRecord::check_peer_gave_up(int peer) {
  Peer record;
  if (!read(peer, &record) || !record.gave_up || record.value == identity_.value) return;
  try {
    client_.remove(identity_.place(slot(peer)));  // read: a later group of the slot starts clean
  } catch (const Error&) {
  }
  raise_disagreement(peer, record.value);
}

void MeetingRecord::check_missing_at_deadline(const std::vector<int>& missing) {
  for (int peer : missing) {
    Peer record;
    if (!read(peer, &record) || record.value == identity_.value) continue;
    try {
      client_.set(identity_.place(slot(rank_)), std::string(kGaveUp) + "\n" + identity_.value);
      gave_up_ = true;
    } catch (const Error&) {
      // The peer then times out on its own deadline; this rank still names the disagreement.
    }
    raise_disagreement(peer, record.value);
  }
}

}  // namespace memloom::core
