// Failing collective calls on every rank together: a rank that finds its own arguments bad, or
// whose local work failed, tells the others instead of leaving them waiting, and ranks compare
// their arguments so a mismatch fails everywhere with kInvalidInput.
#pragma once

#include <new>
#include <string>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/group.h"

namespace memloom::wholememory {

// The outcome of one rank's local part of a collective call.
struct LocalOutcome {
  Status status = Status::kSuccess;
  std::string message;
  bool failed() const { return status != Status::kSuccess; }
};

// Runs fn() and records its failure instead of throwing.
template <typename Fn>
LocalOutcome capture_failure(Fn&& fn) {
  try {
    fn();
    return {};
  } catch (const Error& error) {
    return {error.status(), error.what()};
  } catch (const std::bad_alloc&) {
    return {Status::kOutOfMemory, "host memory allocation failed"};
  } catch (const std::exception& error) {
    return {Status::kLogic, error.what()};
  }
}

// Collective over `group`. Throws on every rank when any rank's `local` failed (that rank throws
// its own error; the others the same status, naming the rank) or when `arguments` differ between
// ranks (kInvalidInput, naming the ranks that differ from rank 0).
void agree_on_arguments(core::Group& group, const std::string& operation,
                        const std::string& arguments, const LocalOutcome& local, Deadline deadline);

// Collective over `group`: throws on every rank when any rank's local work failed.
void fail_together(core::Group& group, const std::string& operation, const LocalOutcome& local,
                   Deadline deadline);

}  // namespace memloom::wholememory
