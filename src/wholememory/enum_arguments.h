// Enum parameters of the C API. A C caller may pass any int where an enum is declared, and C++
// may not even load a value outside the enum's range as the enum type, so the bits are read as an
// integer and checked before the value is used.
#pragma once

#include <cstring>
#include <string>

#include "memloom/error.h"

namespace memloom::wholememory {

template <typename Enum>
int enum_bits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C API enums are int-sized");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

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
