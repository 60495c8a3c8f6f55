// Numbers and addresses in hexadecimal, for messages ("0x7f12abc000"): one spelling everywhere.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace memloom::base {

inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

inline std::string hex(const void* address) {
  return hex(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address)));
}

}  // namespace memloom::base
