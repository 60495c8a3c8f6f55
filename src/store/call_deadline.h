// The deadline of the API call a thread is in (smem_shm_create, smem_bm_create, a WholeMemory
// communicator's creation), for the store calls it makes. Client operations take no deadline of
// their own, and a client's time per call (ClientOptions.connect_timeout, which the APIs set from
// their init timeout) may be far longer than the call's: without this, a create whose store died
// would wait out the init timeout (20 s) instead of its own (6 s). A client bounds each call by
// the innermost scope in force on the calling thread, as it would a deadline passed in.
#pragma once

#include <chrono>
#include <optional>

#include "memloom/deadline.h"

namespace memloom::store {

class CallDeadlineScope {
 public:
  // The least time a store call in a scope gets, even at or past the scope's deadline: the calls
  // that name what went wrong after a wait timed out still get their answer, and the caller's
  // error comes at most this long after its deadline.
  static constexpr std::chrono::milliseconds kLeastCallTime{1000};

  // Nested scopes keep the earlier deadline.
  explicit CallDeadlineScope(Deadline deadline);
  ~CallDeadlineScope();
  CallDeadlineScope(const CallDeadlineScope&) = delete;
  CallDeadlineScope& operator=(const CallDeadlineScope&) = delete;

  // `own` (a client's deadline for one call) bounded by the calling thread's scope, if any.
  static Deadline bound(Deadline own);

 private:
  std::optional<Deadline> outer_;
};

}  // namespace memloom::store
