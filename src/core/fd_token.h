// The token that names one FdBroker publication: "<socket>#<id>.<secret>". The socket is the
// owner's abstract Unix socket, the id a random 64-bit number and the secret 128 random bits from
// the kernel's CSPRNG; holding the token is what entitles a process of the job to the descriptor.
// Tokens travel only through the job's config store, so they must never be logged whole.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace memloom::core {

inline constexpr size_t kFdSecretBytes = 16;
using FdSecret = std::array<uint8_t, kFdSecretBytes>;

struct FdToken {
  std::string socket;
  uint64_t id = 0;
  FdSecret secret{};

  std::string format() const;
  // The token without its secret: what error messages and logs may show.
  std::string redacted() const;
  // nullopt unless `text` has exactly the form format() writes.
  static std::optional<FdToken> parse(const std::string& text);
};

// Fills `bytes` from getrandom(2); throws kSystem when the kernel cannot supply them.
void fill_random(void* bytes, size_t size);

// Compares two secrets in time independent of where they differ.
bool same_secret(const FdSecret& a, const FdSecret& b);

}  // namespace memloom::core
