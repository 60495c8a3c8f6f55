// Numbers and addresses in hexadecimal, for messages ("0x7f12abc000"): one spelling everywhere.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace memloom::base {

inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

inline std::string hex(const void* address) {
  return hex(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address)));
}

// Bytes as lowercase hex digits, two per byte: tokens, secrets, device identities.
inline std::string hex_bytes(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::string text;
  text.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    text.push_back(kDigits[bytes[i] >> 4]);
    text.push_back(kDigits[bytes[i] & 15]);
  }
  return text;
}

// Reads exactly 2 * size lowercase hex digits into `data`; false (data undefined) for any other
// text, uppercase included, so that one value has one spelling.
inline bool parse_hex_bytes(std::string_view text, void* data, size_t size) {
  if (text.size() != 2 * size) return false;
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  auto* bytes = static_cast<uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    const int high = value(text[2 * i]);
    const int low = value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return true;
}

}  // namespace memloom::base
