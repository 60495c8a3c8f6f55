#include "src/core/fd_token.h"

#include <sys/random.h>

#include <cerrno>

#include "memloom/error.h"
#include "src/base/hex.h"

namespace memloom::core {
namespace {

constexpr size_t kIdDigits = 16;

// The id as 16 hex digits, most significant first.
std::string id_text(uint64_t id) {
  uint8_t bytes[kIdDigits / 2];
  for (size_t i = 0; i < sizeof(bytes); ++i) bytes[i] = static_cast<uint8_t>(id >> (56 - 8 * i));
  return base::hex_bytes(bytes, sizeof(bytes));
}

}  // namespace

std::string FdToken::format() const {
  std::string out = socket + "#" + id_text(id) + ".";
  out += base::hex_bytes(secret.data(), secret.size());
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
  const std::string_view view(text);
  if (!base::parse_hex_bytes(view.substr(hash + 1, kIdDigits), id_bytes, sizeof(id_bytes))) {
    return std::nullopt;
  }
  for (uint8_t byte : id_bytes) token.id = token.id << 8 | byte;
  if (!base::parse_hex_bytes(view.substr(dot + 1), token.secret.data(), token.secret.size())) {
    return std::nullopt;
  }
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
