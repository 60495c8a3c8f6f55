// Element types of the row kernels and conversions between them, written once for the CPU and the
// GPU. Half and bfloat16 are converted by hand (round to nearest, ties to even) so that both
// backends produce the same bits without depending on a vendor header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "src/kernels/host_device.h"

namespace memloom::kernels {

// Numbered as wholememory_dtype_t, so the WholeMemory layer converts by value (it checks this).
enum class DType : int32_t {
  kUnknown = 0,
  kFloat = 1,
  kHalf = 2,
  kDouble = 3,
  kBf16 = 4,
  kInt = 5,
  kInt64 = 6,
  kInt16 = 7,
  kInt8 = 8,
};

MEMLOOM_HOST_DEVICE inline size_t element_size(DType type) {
  switch (type) {
    case DType::kDouble:
    case DType::kInt64:
      return 8;
    case DType::kFloat:
    case DType::kInt:
      return 4;
    case DType::kHalf:
    case DType::kBf16:
    case DType::kInt16:
      return 2;
    case DType::kInt8:
      return 1;
    default:
      return 0;
  }
}

MEMLOOM_HOST_DEVICE inline bool is_floating(DType type) {
  return type == DType::kFloat || type == DType::kHalf || type == DType::kDouble ||
         type == DType::kBf16;
}

MEMLOOM_HOST_DEVICE inline uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}

MEMLOOM_HOST_DEVICE inline float float_from_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

// IEEE binary16 -> binary32 (exact).
MEMLOOM_HOST_DEVICE inline float half_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return float_from_bits(sign);
  // A subnormal half is a normal float: shift the leading one up to the implicit bit.
  exponent = 113;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --exponent;
  }
  return float_from_bits(sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

// Rounds `value >> shift` to nearest, ties to even (shift in [1, 31]).
MEMLOOM_HOST_DEVICE inline uint32_t shift_round_even(uint32_t value, uint32_t shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  return kept + ((rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u);
}

// binary32 -> binary16, round to nearest even; overflow gives infinity, NaN stays NaN.
MEMLOOM_HOST_DEVICE inline uint16_t float_to_half(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // infinity or NaN (keep the payload's top bits, stay quiet)
    const uint32_t nan = magnitude > 0x7f800000u ? (0x200u | ((magnitude >> 13) & 0x3ffu)) : 0u;
    return static_cast<uint16_t>(sign | 0x7c00u | nan);
  }
  // 65520 and above round to infinity (65504 is the largest half, and its last bit is odd).
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {  // a normal half: rebias the exponent by 127 - 15
    return static_cast<uint16_t>(sign | shift_round_even(magnitude - 0x38000000u, 13));
  }
  // A subnormal half counts units of 2^-24: value = m * 2^(e - 150) = (m >> (126 - e)) units.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t shift = 126 - exponent;
  if (shift > 24) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_round_even(mantissa, shift));
}

MEMLOOM_HOST_DEVICE inline float bf16_to_float(uint16_t value) {
  return float_from_bits(static_cast<uint32_t>(value) << 16);
}

// binary32 -> bfloat16, round to nearest even; NaN stays a (quiet) NaN.
MEMLOOM_HOST_DEVICE inline uint16_t float_to_bf16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// Storage types and their conversions to a common value (double for floating types, int64 for
// integers). Converting between the two families is not allowed by the API, so never needed.
template <DType T>
struct Element;
template <>
struct Element<DType::kFloat> {
  using Storage = float;
  MEMLOOM_HOST_DEVICE static double load(Storage v) { return v; }
  MEMLOOM_HOST_DEVICE static Storage store(double v) { return static_cast<float>(v); }
};
template <>
struct Element<DType::kDouble> {
  using Storage = double;
  MEMLOOM_HOST_DEVICE static double load(Storage v) { return v; }
  MEMLOOM_HOST_DEVICE static Storage store(double v) { return v; }
};
template <>
struct Element<DType::kHalf> {
  using Storage = uint16_t;
  MEMLOOM_HOST_DEVICE static double load(Storage v) { return half_to_float(v); }
  // Through float: a double is first rounded to float, then to half.
  MEMLOOM_HOST_DEVICE static Storage store(double v) {
    return float_to_half(static_cast<float>(v));
  }
};
template <>
struct Element<DType::kBf16> {
  using Storage = uint16_t;
  MEMLOOM_HOST_DEVICE static double load(Storage v) { return bf16_to_float(v); }
  MEMLOOM_HOST_DEVICE static Storage store(double v) {
    return float_to_bf16(static_cast<float>(v));
  }
};
template <DType T, typename S>
struct IntegerElement {
  using Storage = S;
  MEMLOOM_HOST_DEVICE static int64_t load(Storage v) { return v; }
  // Narrowing keeps the low bits (two's complement), as a C cast does.
  MEMLOOM_HOST_DEVICE static Storage store(int64_t v) {
    return static_cast<Storage>(static_cast<uint64_t>(v));
  }
};
template <>
struct Element<DType::kInt> : IntegerElement<DType::kInt, int32_t> {};
template <>
struct Element<DType::kInt64> : IntegerElement<DType::kInt64, int64_t> {};
template <>
struct Element<DType::kInt16> : IntegerElement<DType::kInt16, int16_t> {};
template <>
struct Element<DType::kInt8> : IntegerElement<DType::kInt8, int8_t> {};

template <DType From, DType To>
MEMLOOM_HOST_DEVICE void convert_elements_as(const void* source, void* destination, size_t count) {
  using In = Element<From>;
  using Out = Element<To>;
  const auto* in = static_cast<const typename In::Storage*>(source);
  auto* out = static_cast<typename Out::Storage*>(destination);
  for (size_t i = 0; i < count; ++i) out[i] = Out::store(In::load(in[i]));
}

template <DType From>
MEMLOOM_HOST_DEVICE bool convert_from(DType to, const void* source, void* destination,
                                      size_t count) {
  if constexpr (From == DType::kFloat || From == DType::kHalf || From == DType::kDouble ||
                From == DType::kBf16) {
    switch (to) {
      case DType::kFloat:
        convert_elements_as<From, DType::kFloat>(source, destination, count);
        return true;
      case DType::kHalf:
        convert_elements_as<From, DType::kHalf>(source, destination, count);
        return true;
      case DType::kDouble:
        convert_elements_as<From, DType::kDouble>(source, destination, count);
        return true;
      case DType::kBf16:
        convert_elements_as<From, DType::kBf16>(source, destination, count);
        return true;
      default:
        return false;
    }
  } else {
    switch (to) {
      case DType::kInt:
        convert_elements_as<From, DType::kInt>(source, destination, count);
        return true;
      case DType::kInt64:
        convert_elements_as<From, DType::kInt64>(source, destination, count);
        return true;
      case DType::kInt16:
        convert_elements_as<From, DType::kInt16>(source, destination, count);
        return true;
      case DType::kInt8:
        convert_elements_as<From, DType::kInt8>(source, destination, count);
        return true;
      default:
        return false;
    }
  }
}

// Converts `count` elements; false (nothing written) for a pair across the float/integer families
// or an unknown type, which callers have rejected before launching.
MEMLOOM_HOST_DEVICE inline bool convert_elements(DType from, DType to, const void* source,
                                                 void* destination, size_t count) {
  switch (from) {
    case DType::kFloat:
      return convert_from<DType::kFloat>(to, source, destination, count);
    case DType::kHalf:
      return convert_from<DType::kHalf>(to, source, destination, count);
    case DType::kDouble:
      return convert_from<DType::kDouble>(to, source, destination, count);
    case DType::kBf16:
      return convert_from<DType::kBf16>(to, source, destination, count);
    case DType::kInt:
      return convert_from<DType::kInt>(to, source, destination, count);
    case DType::kInt64:
      return convert_from<DType::kInt64>(to, source, destination, count);
    case DType::kInt16:
      return convert_from<DType::kInt16>(to, source, destination, count);
    case DType::kInt8:
      return convert_from<DType::kInt8>(to, source, destination, count);
    default:
      return false;
  }
}

}  // namespace memloom::kernels
