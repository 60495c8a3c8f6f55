// Addresses in error messages, written the way debuggers print them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace memloom::smem::trans {

inline std::string hex_address(uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

inline std::string hex_address(const void* address) {
  return hex_address(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address)));
}

}  // namespace memloom::smem::trans
