// The CUDA backend's descriptors (hal::ExportedSegment::descriptor) are the bytes of a trivially
// copyable struct whose first two fields are a magic number and a version. Decoding checks the
// size, the magic and the version, so bytes of another backend or build are refused with a clear
// error instead of being misread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "memloom/error.h"

namespace memloom::cuda {

template <class Wire>
std::vector<uint8_t> encode_wire(const Wire& wire) {
  static_assert(std::is_trivially_copyable_v<Wire>, "descriptors travel as bytes");
  std::vector<uint8_t> bytes(sizeof(wire));
  std::memcpy(bytes.data(), &wire, sizeof(wire));
  return bytes;
}

// `what` names the descriptor in messages ("segment descriptor").
template <class Wire>
Wire decode_wire(const std::vector<uint8_t>& bytes, const char* what, uint32_t magic,
                 uint32_t version) {
  static_assert(std::is_trivially_copyable_v<Wire>, "descriptors travel as bytes");
  Wire wire{};
  if (bytes.size() != sizeof(wire)) {
    raise(Status::kInvalidInput, std::string(what) + " of " + std::to_string(bytes.size()) +
                                     " bytes is not a CUDA backend descriptor");
  }
  std::memcpy(&wire, bytes.data(), sizeof(wire));
  if (wire.magic != magic || wire.version != version) {
    raise(Status::kInvalidInput,
          std::string(what) + " was not made by this version of the CUDA backend");
  }
  return wire;
}

}  // namespace memloom::cuda
