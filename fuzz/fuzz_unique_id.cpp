// libFuzzer target: the WholeMemory unique-id decoder (src/wholememory/unique_id.h), which reads
// the 128 bytes that applications pass between ranks (often through files or sockets of their
// own).
//
// Beyond "no crash, no sanitizer report, only memloom::Error", an id the decoder accepts must be
// exactly what the encoder writes for the decoded contents (no two encodings of one id).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "memloom/error.h"
#include "src/wholememory/unique_id.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Shorter inputs are zero-padded and longer ones cut, so every input is a candidate id.
  wholememory_unique_id_t encoded{};
  std::memcpy(encoded.internal, data, std::min(size, sizeof(encoded.internal)));
  memloom::wholememory::UniqueId id;
  try {
    id = memloom::wholememory::decode_unique_id(encoded);
  } catch (const memloom::Error&) {
    return 0;
  }
  wholememory_unique_id_t again = memloom::wholememory::encode_unique_id(id);
  if (std::memcmp(again.internal, encoded.internal, sizeof(encoded.internal)) != 0) {
    std::fprintf(stderr, "fuzz_unique_id: an accepted id does not re-encode to itself\n");
    std::abort();
  }
  return 0;
}
