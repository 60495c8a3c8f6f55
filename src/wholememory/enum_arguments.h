// Enum parameters of the WholeMemory C API, checked before use (src/base/enum_bits.h says why).
#pragma once

#include <string>

#include "memloom/error.h"
#include "src/base/enum_bits.h"

namespace memloom::wholememory {

using base::enum_bits;

// Returns `value` if it is one of first..last; throws kInvalidInput naming `what` otherwise.
template <typename Enum>
Enum checked_enum(const Enum& value, Enum first, Enum last, const char* what) {
  const int bits = enum_bits(value);
  if (bits < static_cast<int>(first) || bits > static_cast<int>(last)) {
    raise(Status::kInvalidInput, std::to_string(bits) + " is not a valid " + what);
  }
  return static_cast<Enum>(bits);
}

}  // namespace memloom::wholememory
