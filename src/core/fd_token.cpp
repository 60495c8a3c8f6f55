#include "src/core/fd_token.h"

#include <sys/random.h>

#include <cerrno>

#include "memloom/error.h"

namespace memloom::core {
namespace {

constexpr char kDigits[] = "0123456789abcdef";
constexpr size_t kIdDigits = 16;

void append_hex(std::string& out, const uint8_t* bytes, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Reads exactly 2 * size lowercase hex digits into bytes.
bool parse_hex(const std::string& text, size_t from, uint8_t* bytes, size_t size) {
  if (text.size() - from != 2 * size) return false;
  for (size_t i = 0; i < size; ++i) {
    const int high = digit_value(text[from + 2 * i]);
    const int low = digit_value(text[from + 2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return true;
}

std::string id_text(uint64_t id) {
  std::string out;
  for (int shift = 60; shift >= 0; shift -= 4) out += kDigits[(id >> shift) & 0xf];
  return out;
}

}  // namespace

std::string FdToken::format() const {
  std::string out = socket + "#" + id_text(id) + ".";
  append_hex(out, secret.data(), secret.size());
  return out;
}

std::string FdToken::redacted() const {
  return socket + "#" + id_text(id);
}

std::optional<FdToken> FdToken::parse(const std::string& text) {
  const auto hash = text.rfind('#');
  if (hash == std::string::npos || hash == 0) return std::nullopt;
  const size_t dot = hash + 1 + kIdDigits;
  if (text.size() <= dot || text[dot] != '.') return std::nullopt;
  FdToken token;
  token.socket = text.substr(0, hash);
  uint8_t id_bytes[kIdDigits / 2];
  if (!parse_hex(text.substr(0, dot), hash + 1, id_bytes, sizeof(id_bytes))) return std::nullopt;
  for (uint8_t byte : id_bytes) token.id = token.id << 8 | byte;
  if (!parse_hex(text, dot + 1, token.secret.data(), token.secret.size())) return std::nullopt;
  return token;
}

void fill_random(void* bytes, size_t size) {
  auto* out = static_cast<uint8_t*>(bytes);
  while (size > 0) {
    const ssize_t got = ::getrandom(out, size, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      raise_errno("getrandom", errno);
    }
    out += got;
    size -= static_cast<size_t>(got);
  }
}

bool same_secret(const FdSecret& a, const FdSecret& b) {
  // Accumulate every difference, through a volatile so the compiler cannot stop at the first.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference = difference | (a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace memloom::core
