// Releasing resources from destructors: a failure to unmap is logged, never thrown (a destructor
// that throws would end the process).
#pragma once

#include <exception>

#include "src/base/log.h"

namespace memloom::wholememory {

template <typename Fn>
void release_quietly(const char* what, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "releasing " << what << " failed: " << error.what());
  } catch (...) {
    MEMLOOM_LOG(kWarn, "releasing " << what << " failed");
  }
}

}  // namespace memloom::wholememory
