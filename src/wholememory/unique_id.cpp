#include "src/wholememory/unique_id.h"

#include <cstring>
#include <random>

#include "memloom/error.h"
#include "src/base/hex.h"

namespace memloom::wholememory {
namespace {

// Layout of the 128 bytes: magic, version, URL length, token, URL, zero padding, checksum.
constexpr char kMagic[4] = {'M', 'L', 'W', 'M'};
constexpr uint8_t kVersion = 1;
constexpr size_t kVersionAt = 4;
constexpr size_t kUrlLengthAt = 5;
constexpr size_t kTokenAt = 6;
constexpr size_t kUrlAt = kTokenAt + UniqueId::kTokenBytes;
constexpr size_t kChecksumAt = WHOLEMEMORY_UNIQUE_ID_BYTES - 4;
constexpr size_t kMaxUrlBytes = kChecksumAt - kUrlAt;

uint32_t fnv1a(const uint8_t* bytes, size_t count) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < count; ++i) {
    hash ^= bytes[i];
    hash *= 16777619u;
  }
  return hash;
}

}  // namespace

UniqueId UniqueId::generate(const std::string& store_url) {
  UniqueId id;
  id.store_url = store_url;
  std::random_device random;
  for (size_t i = 0; i < kTokenBytes; i += 4) {
    uint32_t word = random();
    std::memcpy(id.token.data() + i, &word, 4);
  }
  return id;
}

std::string UniqueId::token_hex() const {
  return base::hex_bytes(token.data(), token.size());
}

wholememory_unique_id_t encode_unique_id(const UniqueId& id) {
  if (id.store_url.empty() || id.store_url.size() > kMaxUrlBytes) {
    raise(Status::kInvalidValue, "store URL '" + id.store_url +
                                     "' does not fit in a unique id (1.." +
                                     std::to_string(kMaxUrlBytes) + " bytes)");
  }
  wholememory_unique_id_t encoded{};
  auto* bytes = reinterpret_cast<uint8_t*>(encoded.internal);
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  bytes[kVersionAt] = kVersion;
  bytes[kUrlLengthAt] = static_cast<uint8_t>(id.store_url.size());
  std::memcpy(bytes + kTokenAt, id.token.data(), UniqueId::kTokenBytes);
  std::memcpy(bytes + kUrlAt, id.store_url.data(), id.store_url.size());
  uint32_t checksum = fnv1a(bytes, kChecksumAt);
  std::memcpy(bytes + kChecksumAt, &checksum, sizeof(checksum));
  return encoded;
}

UniqueId decode_unique_id(const wholememory_unique_id_t& encoded) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(encoded.internal);
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    raise(Status::kInvalidInput, "not a memloom WholeMemory unique id (bad magic)");
  }
  if (bytes[kVersionAt] != kVersion) {
    raise(Status::kInvalidInput, "unique id version " + std::to_string(bytes[kVersionAt]) +
                                     " is not supported (expected " + std::to_string(kVersion) +
                                     ")");
  }
  const size_t url_length = bytes[kUrlLengthAt];
  if (url_length == 0 || url_length > kMaxUrlBytes) {
    raise(Status::kInvalidInput,
          "unique id has a bad store URL length " + std::to_string(url_length));
  }
  for (size_t i = kUrlAt + url_length; i < kChecksumAt; ++i) {
    if (bytes[i] != 0) raise(Status::kInvalidInput, "unique id is corrupted (padding is not zero)");
  }
  uint32_t checksum = 0;
  std::memcpy(&checksum, bytes + kChecksumAt, sizeof(checksum));
  if (checksum != fnv1a(bytes, kChecksumAt)) {
    raise(Status::kInvalidInput, "unique id is corrupted (checksum mismatch)");
  }
  UniqueId id;
  std::memcpy(id.token.data(), bytes + kTokenAt, UniqueId::kTokenBytes);
  id.store_url.assign(reinterpret_cast<const char*>(bytes + kUrlAt), url_length);
  return id;
}

}  // namespace memloom::wholememory
