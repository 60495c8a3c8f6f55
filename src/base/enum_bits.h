// Enum parameters of the C APIs. A C caller may pass any int where an enum is declared, and C++
// may not even load a value outside the enum's range as the enum type, so the bits are read as an
// integer and checked before the value is used.
#pragma once

#include <cstring>

namespace memloom::base {

template <typename Enum>
int enum_bits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C API enums are int-sized");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

}  // namespace memloom::base
