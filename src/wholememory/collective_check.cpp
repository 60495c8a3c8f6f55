#include "src/wholememory/collective_check.h"

#include <sstream>
#include <vector>

namespace memloom::wholememory {
namespace {

// A rank's contribution: 'F' + status + ':' + message, or 'A' + arguments.
std::string encode(const std::string& arguments, const LocalOutcome& local) {
  if (local.failed())
    return "F" + std::to_string(static_cast<int>(local.status)) + ":" + local.message;
  return "A" + arguments;
}

// Throws when some rank failed: mine with my own error, otherwise the first failing rank's.
void raise_first_failure(const std::vector<std::string>& all, const std::string& operation,
                         const LocalOutcome& local) {
  if (local.failed()) raise(local.status, local.message);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty() || all[r][0] != 'F') continue;
    const auto colon = all[r].find(':');
    const auto status = static_cast<Status>(std::stoi(all[r].substr(1, colon - 1)));
    raise(status,
          operation + " failed on rank " + std::to_string(r) + ": " + all[r].substr(colon + 1));
  }
}

}  // namespace

void agree_on_arguments(core::Group& group, const std::string& operation,
                        const std::string& arguments, const LocalOutcome& local,
                        Deadline deadline) {
  const auto all = group.allgather_strings(encode(arguments, local), deadline);
  raise_first_failure(all, operation, local);
  std::ostringstream differing;
  int count = 0;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) differing << (count++ ? ", " : "") << r;
  }
  if (count > 0) {
    raise(Status::kInvalidInput,
          operation + ": ranks passed different arguments; rank(s) " + differing.str() +
              " differ from rank 0 (rank 0: " + all[0].substr(1) + ", rank " +
              std::to_string(group.rank()) + ": " + arguments + ")");
  }
}

void fail_together(core::Group& group, const std::string& operation, const LocalOutcome& local,
                   Deadline deadline) {
  const auto all = group.allgather_strings(encode("", local), deadline);
  raise_first_failure(all, operation, local);
}

}  // namespace memloom::wholememory
