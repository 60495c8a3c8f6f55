// The contents of a wholememory_unique_id_t: where the config store is and a random token that
// namespaces the communicator's keys in it. Encoded with a magic, a version and a checksum so a
// garbage id is refused instead of sending ranks to a wrong rendezvous.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "wholememory/wholememory.h"

namespace memloom::wholememory {

struct UniqueId {
  static constexpr size_t kTokenBytes = 16;
  std::string store_url;
  std::array<uint8_t, kTokenBytes> token{};

  // A fresh id for the store at `store_url` with a random token.
  static UniqueId generate(const std::string& store_url);
  std::string token_hex() const;
};

// Throws kInvalidValue if the URL does not fit.
wholememory_unique_id_t encode_unique_id(const UniqueId& id);
// Throws kInvalidInput for anything encode_unique_id did not produce.
UniqueId decode_unique_id(const wholememory_unique_id_t& encoded);

}  // namespace memloom::wholememory
