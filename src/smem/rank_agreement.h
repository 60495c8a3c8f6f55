// Collective checks shared by the SHM and BM objects: ranks agree on their arguments, and a step
// that may fail on some ranks fails on all of them, so no rank waits for a peer that gave up.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/group.h"

namespace memloom::smem {

struct AgreedField {
  const char* name;
  uint64_t value;
};

// Collective: throws kInvalidInput on every rank when any field differs between ranks; the message
// names `call`, the field and the values of rank 0 and of the first rank that differs.
void agree_on_fields(core::Group& group, const std::string& call,
                     const std::vector<AgreedField>& fields, Deadline deadline);

// Collective: every rank shares its outcome (nullopt = success). The failing rank rethrows its own
// error; every other rank throws kCommunication naming the first failing rank and its reason.
void agree_on_outcome(core::Group& group, const std::string& step, const std::optional<Error>& mine,
                      Deadline deadline);

// Runs step() and agrees on its outcome (see agree_on_outcome).
template <typename Step>
void run_on_all_or_none(core::Group& group, const std::string& name, Step&& step,
                        Deadline deadline) {
  std::optional<Error> failure;
  try {
    step();
  } catch (const Error& error) {
    failure = error;
  } catch (const std::bad_alloc&) {
    failure = Error(Status::kOutOfMemory, name + ": host memory allocation failed");
  } catch (const std::exception& error) {
    failure = Error(Status::kLogic, name + ": " + error.what());
  }
  agree_on_outcome(group, name, failure, deadline);
}

}  // namespace memloom::smem
