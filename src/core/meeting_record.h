// Ranks meant to form one group but given different values of what names it (a BM or SHM object
// id, a WholeMemory unique id) wait in different groups and never meet, so the group's own checks
// cannot see the disagreement. Where such ranks can still see each other (the same store, the same
// world or job, a place that gives each rank one slot), each records there the value it was given
// while it waits. A rank whose deadline passes without a peer looks at that peer's record: when
// the peer waits under another value, it names both values instead of timing out, and marks its
// own record as given up, so that the peer, polling its own wait, names them too within a poll.
#pragma once

#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "src/store/client.h"

namespace memloom::core {

// What names a group besides its key prefix, and where ranks that might be meant to meet record
// it: `place` must give every rank of every group that could be confused with this one its own
// slot (its rank there), or a record of another group could be taken for a disagreement.
struct GroupIdentity {
  store::KeyPrefix place{""};
  std::string what;   // "id", "unique id"
  std::string value;  // this rank's value
};

class MeetingRecord {
 public:
  // How often a waiting rank looks whether the peer it waits for gave up over a disagreement.
  static constexpr std::chrono::milliseconds kPollEvery{250};

  // Records `identity.value` under `rank` (replacing an older record of the slot).
  MeetingRecord(store::Client& client, GroupIdentity identity, int rank);
  // Removes the record unless it says this rank gave up (the peer still has to read that).
  ~MeetingRecord();

  // While waiting for `peer`: throws kInvalidInput naming both values when the peer gave up
  // because of this rank's value (the record it left says so); the record is then removed.
  void check_peer_gave_up(int peer);
  // The deadline passed with `missing` absent: throws kInvalidInput naming both values when one
  // of them waits (or gave up) under another value, after marking this rank's record given up.
  // Returns when none does (an ordinary timeout).
  void check_missing_at_deadline(const std::vector<int>& missing);

 private:
  struct Peer {
    bool gave_up = false;
    std::string value;
  };
  // The record of `rank`, if any; store failures count as no record (this only refines errors).
  bool read(int rank, Peer* peer);
  [[noreturn]] void raise_disagreement(int peer, const std::string& theirs) const;

  store::Client& client_;
  GroupIdentity identity_;
  int rank_;
  bool gave_up_ = false;
};

}  // namespace memloom::core
