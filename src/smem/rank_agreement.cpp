#include "src/smem/rank_agreement.h"

#include <cstring>

namespace memloom::smem {
namespace {

struct Outcome {
  int32_t status = 0;  // a Status value; 0 = success
  char message[236] = {};
};

}  // namespace

void agree_on_fields(core::Group& group, const std::string& call,
                     const std::vector<AgreedField>& fields, Deadline deadline) {
  const size_t count = fields.size();
  std::vector<uint64_t> mine(count), all(count * static_cast<size_t>(group.size()));
  for (size_t f = 0; f < count; ++f) mine[f] = fields[f].value;
  group.collectives().allgather(mine.data(), all.data(), count * sizeof(uint64_t), deadline);
  for (size_t f = 0; f < count; ++f) {
    for (int r = 1; r < group.size(); ++r) {
      uint64_t value = all[static_cast<size_t>(r) * count + f];
      if (value == all[f]) continue;
      raise(Status::kInvalidInput, call + ": ranks disagree on " + fields[f].name +
                                       ": rank 0 passed " + std::to_string(all[f]) + ", rank " +
                                       std::to_string(r) + " passed " + std::to_string(value) +
                                       " (this is rank " + std::to_string(group.rank()) + ")");
    }
  }
}

void agree_on_outcome(core::Group& group, const std::string& step, const std::optional<Error>& mine,
                      Deadline deadline) {
  Outcome outcome;
  if (mine) {
    outcome.status = static_cast<int32_t>(mine->status());
    std::strncpy(outcome.message, mine->what(), sizeof(outcome.message) - 1);
  }
  std::vector<Outcome> all(static_cast<size_t>(group.size()));
  group.collectives().allgather(&outcome, all.data(), sizeof(Outcome), deadline);
  if (mine) throw *mine;
  for (int r = 0; r < group.size(); ++r) {
    const Outcome& other = all[static_cast<size_t>(r)];
    if (other.status == 0) continue;
    raise(Status::kCommunication,
          step + " failed on rank " + std::to_string(r) + ": " +
              std::string(other.message, strnlen(other.message, sizeof(other.message))));
  }
}

}  // namespace memloom::smem
