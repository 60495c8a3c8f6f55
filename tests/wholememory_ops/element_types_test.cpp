// The element conversions and the row-copy kernel body, run directly on the host: half and
// bfloat16 rounding against an independent nearest-value search, integer narrowing, and the
// addressing of chunked tables (uneven and empty chunks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/kernels/element_types.h"
#include "src/kernels/row_copy_kernel.h"

namespace memloom::kernels {
namespace {

float from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// True when `chosen` is a nearest representable value of `value` among its neighbours, and
// even (last bit 0) when there is a tie.
template <typename ToFloat>
void expect_nearest(float value, uint16_t chosen, ToFloat to_float) {
  const double exact = value;
  const double distance = std::fabs(to_float(chosen) - exact);
  for (int step : {-1, 1}) {
    const uint16_t neighbour = static_cast<uint16_t>(chosen + step);
    const float other = to_float(neighbour);
    if (std::isnan(other) || (neighbour & 0x7fff) == 0x7fff) continue;
    // Neighbours across the sign bit or zero are not closer in value order; skip those.
    if ((neighbour & 0x8000) != (chosen & 0x8000)) continue;
    const double other_distance = std::fabs(static_cast<double>(other) - exact);
    ASSERT_LE(distance, other_distance) << "value " << value << " chose " << chosen;
    if (distance == other_distance) {
      ASSERT_EQ(0, chosen & 1) << "tie for " << value << " must round to even";
    }
  }
}

TEST(ElementTypes, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = half_to_float(half);
    if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff) != 0) {
      EXPECT_TRUE(std::isnan(value));
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(value))));
      continue;
    }
    ASSERT_EQ(half, float_to_half(value)) << "half " << bits;
  }
}

TEST(ElementTypes, HalfKnownValues) {
  EXPECT_EQ(0x3c00, float_to_half(1.0f));
  EXPECT_EQ(0xc000, float_to_half(-2.0f));
  EXPECT_EQ(0x7bff, float_to_half(65504.0f));
  EXPECT_EQ(0x7bff, float_to_half(65519.0f));
  EXPECT_EQ(0x7c00, float_to_half(65520.0f));  // the tie above the largest half goes to infinity
  EXPECT_EQ(0xfc00, float_to_half(-std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0x8000, float_to_half(-0.0f));
  EXPECT_EQ(0x0001, float_to_half(std::ldexp(1.0f, -24)));         // smallest subnormal
  EXPECT_EQ(0x0000, float_to_half(std::ldexp(1.0f, -25)));         // tie to even: zero
  EXPECT_EQ(0x0001, float_to_half(std::ldexp(1.5f, -25)));         // above the tie
  EXPECT_EQ(0x0400, float_to_half(std::ldexp(1.0f, -14)));         // smallest normal
  EXPECT_EQ(0x3c00, float_to_half(1.0f + std::ldexp(1.0f, -11)));  // tie to even (down)
  EXPECT_EQ(0x3c02, float_to_half(1.0f + std::ldexp(3.0f, -11)));  // tie to even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(1.0f, half_to_float(0x3c00));
  EXPECT_EQ(std::ldexp(1.0f, -24), half_to_float(0x0001));
}

TEST(ElementTypes, FloatToHalfAndBf16PickTheNearestValue) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    // Exponents around the half range: subnormals, normals and overflow.
    const uint32_t exponent = 95 + rng() % 50;
    const float value = from_bits((rng() & 0x807fffffu) | (exponent << 23));
    const uint16_t half = float_to_half(value);
    if ((half & 0x7fff) == 0x7c00) {
      ASSERT_GE(std::fabs(value), 65520.0f) << value;
    } else {
      expect_nearest(value, half, half_to_float);
    }
    // Any normal float short of the bfloat16 overflow boundary.
    const float wide = from_bits((rng() & 0x807fffffu) | ((1 + rng() % 253) << 23));
    expect_nearest(wide, float_to_bf16(wide), bf16_to_float);
  }
}

TEST(ElementTypes, Bf16KnownValuesAndRoundTrips) {
  EXPECT_EQ(0x3f80, float_to_bf16(1.0f));
  EXPECT_EQ(0x3f80, float_to_bf16(from_bits(0x3f808000u)));  // tie to even (down)
  EXPECT_EQ(0x3f82, float_to_bf16(from_bits(0x3f818000u)));  // tie to even (up)
  EXPECT_EQ(0x7f80, float_to_bf16(from_bits(0x7f7fffffu)));  // rounds up to infinity
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto value = static_cast<uint16_t>(bits);
    if ((value & 0x7f80) == 0x7f80 && (value & 0x7f) != 0) continue;  // NaN
    ASSERT_EQ(value, float_to_bf16(bf16_to_float(value)));
  }
}

TEST(ElementTypes, IntegersNarrowLikeACastAndWidenWithSign) {
  const int64_t wide[] = {300, -1, -129, 70000, std::numeric_limits<int64_t>::min()};
  int8_t narrow[5];
  ASSERT_TRUE(convert_elements(DType::kInt64, DType::kInt8, wide, narrow, 5));
  EXPECT_EQ(44, narrow[0]);
  EXPECT_EQ(-1, narrow[1]);
  EXPECT_EQ(127, narrow[2]);
  EXPECT_EQ(static_cast<int8_t>(70000 & 0xff), narrow[3]);
  EXPECT_EQ(0, narrow[4]);
  int64_t back[5];
  ASSERT_TRUE(convert_elements(DType::kInt8, DType::kInt64, narrow, back, 5));
  EXPECT_EQ(-1, back[1]);
  EXPECT_EQ(127, back[2]);
  const int16_t shorts[] = {-32768, 32767};
  int32_t ints[2];
  ASSERT_TRUE(convert_elements(DType::kInt16, DType::kInt, shorts, ints, 2));
  EXPECT_EQ(-32768, ints[0]);
  EXPECT_EQ(32767, ints[1]);
}

TEST(ElementTypes, FloatingConversionsGoThroughDoubleAndFloat) {
  const double doubles[] = {1.0 / 3.0, 1e300, -2.5};
  float floats[3];
  ASSERT_TRUE(convert_elements(DType::kDouble, DType::kFloat, doubles, floats, 3));
  EXPECT_EQ(static_cast<float>(1.0 / 3.0), floats[0]);
  EXPECT_TRUE(std::isinf(floats[1]));
  EXPECT_EQ(-2.5f, floats[2]);
  uint16_t halves[3];
  ASSERT_TRUE(convert_elements(DType::kDouble, DType::kHalf, doubles, halves, 3));
  EXPECT_EQ(float_to_half(static_cast<float>(1.0 / 3.0)), halves[0]);
  EXPECT_EQ(0x7c00, halves[1]);
  uint16_t brains[3];
  ASSERT_TRUE(convert_elements(DType::kHalf, DType::kBf16, halves, brains, 3));
  EXPECT_EQ(float_to_bf16(half_to_float(halves[0])), brains[0]);
}

TEST(ElementTypes, ConversionsAcrossFamiliesAreRefused) {
  float value = 1.0f;
  int32_t out = 7;
  EXPECT_FALSE(convert_elements(DType::kFloat, DType::kInt, &value, &out, 1));
  EXPECT_FALSE(convert_elements(DType::kInt, DType::kHalf, &out, &value, 1));
  EXPECT_FALSE(convert_elements(DType::kUnknown, DType::kFloat, &out, &value, 1));
  EXPECT_EQ(7, out);
}

// A table of 3 columns (stride 4) split into chunks of 2, 0 and 3 rows: rows live at the right
// chunk, whether the owner is found by search or by division.
TEST(RowCopyKernel, GatherAddressesChunkedTablesAndRecordsBadIndices) {
  std::vector<int32_t> chunk0(2 * 4), chunk2(3 * 4);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c) (r < 2 ? chunk0[r * 4 + c] : chunk2[(r - 2) * 4 + c]) = r * 10 + c;
  }
  char* chunks[] = {reinterpret_cast<char*>(chunk0.data()), nullptr,
                    reinterpret_cast<char*>(chunk2.data())};
  const size_t offsets[] = {0, 32, 32, 80};
  RowCopyArgs args{};
  args.source = RowTable{nullptr, chunks, offsets, 0, 3, 0, 4, 0, DType::kInt};
  std::vector<int64_t> out(6, -7);
  args.destination =
      RowTable{reinterpret_cast<char*>(out.data()), nullptr, nullptr, 0, 0, 0, 3, 0, DType::kInt64};
  const int64_t indices[] = {4, -1};
  args.indices = indices;
  args.index_type = DType::kInt64;
  args.index_bound = 5;
  args.columns = 3;
  args.chunk_columns = 2;  // two items per row, the second one narrower
  args.chunks_per_row = 2;
  args.rows = 2;
  unsigned long long bad = 0;
  args.bad_index = &bad;
  for (size_t item = 0; item < 4; ++item) GatherKernel::body(args, item);
  EXPECT_EQ((std::vector<int64_t>{40, 41, 42, -7, -7, -7}), out);
  EXPECT_EQ(0u, bad);

  const int64_t past[] = {5, 9};
  args.indices = past;
  for (size_t item = 0; item < 4; ++item) GatherKernel::body(args, item);
  EXPECT_EQ(10u, bad);  // 1 + the largest bad index
  EXPECT_EQ(-7, out[3]);
}

// The CPU's whole-row loop (copy_rows, with its prefetching ahead) against the per-item body, over
// ranges that start and end anywhere: a table in equal chunks (owner by division), equal and
// converted dtypes, negative and out-of-range indices, gather and scatter.
TEST(RowCopyKernel, WholeRowRangesMatchTheItemBody) {
  constexpr int64_t kRows = 100, kColumns = 5, kStride = 6, kChunkRows = 34, kCount = 300;
  std::vector<int32_t> table(kRows * kStride);
  std::mt19937_64 rng(11);
  for (auto& value : table) value = static_cast<int32_t>(rng());
  char* base = reinterpret_cast<char*>(table.data());
  const size_t chunk_bytes = kChunkRows * kStride * sizeof(int32_t);
  char* chunks[] = {base, base + chunk_bytes, base + 2 * chunk_bytes};
  const size_t offsets[] = {0, chunk_bytes, 2 * chunk_bytes, table.size() * sizeof(int32_t)};
  const RowTable chunked{nullptr, chunks, offsets, chunk_bytes, 3, 1, kStride, 0, DType::kInt};
  std::vector<int64_t> indices(kCount);
  for (auto& index : indices) index = static_cast<int64_t>(rng() % (kRows + 10)) - 5;

  for (const DType rows_type : {DType::kInt, DType::kInt64}) {
    SCOPED_TRACE("rows of dtype " + std::to_string(static_cast<int>(rows_type)));
    const size_t row_bytes = kColumns * element_size(rows_type);
    for (const bool gather : {true, false}) {
      SCOPED_TRACE(gather ? "gather" : "scatter");
      std::vector<char> rows(kCount * row_bytes);
      for (auto& byte : rows) byte = static_cast<char>(rng());
      const RowTable packed{rows.data(), nullptr, nullptr, 0, 0, 0, kColumns, 0, rows_type};
      auto run = [&](bool whole_rows) {
        std::vector<int32_t> table_copy = table;  // scatter writes the table: start alike
        std::vector<char> rows_copy = rows;
        char* copy_base = reinterpret_cast<char*>(table_copy.data());
        char* copy_chunks[] = {copy_base, copy_base + chunk_bytes, copy_base + 2 * chunk_bytes};
        RowTable indexed = chunked;
        indexed.chunks = copy_chunks;
        RowTable unindexed = packed;
        unindexed.base = rows_copy.data();
        unsigned long long bad = 0;
        RowCopyArgs args{};
        args.source = gather ? indexed : unindexed;
        args.destination = gather ? unindexed : indexed;
        args.indices = indices.data();
        args.index_type = DType::kInt64;
        args.index_bound = kRows;
        args.columns = kColumns;
        args.chunk_columns = kColumns;
        args.chunks_per_row = 1;
        args.rows = kCount;
        args.bad_index = &bad;
        for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, 7}, {7, 150}, {150, 300}}) {
          if (whole_rows) {
            gather ? GatherKernel::copy_rows(args, begin, end)
                   : ScatterKernel::copy_rows(args, begin, end);
          } else {
            for (int64_t i = begin; i < end; ++i) {
              gather ? GatherKernel::body(args, static_cast<size_t>(i))
                     : ScatterKernel::body(args, static_cast<size_t>(i));
            }
          }
        }
        return std::make_tuple(table_copy, rows_copy, bad);
      };
      const auto by_rows = run(true);
      const auto by_items = run(false);
      EXPECT_EQ(std::get<0>(by_items), std::get<0>(by_rows));
      EXPECT_EQ(std::get<1>(by_items), std::get<1>(by_rows));
      EXPECT_EQ(std::get<2>(by_items), std::get<2>(by_rows));
      EXPECT_GT(std::get<2>(by_rows), static_cast<unsigned long long>(kRows));  // some were bad
      if (gather) {
        EXPECT_NE(rows, std::get<1>(by_rows));  // the rows were written
      } else {
        EXPECT_NE(table, std::get<0>(by_rows));
      }
    }
  }
}

}  // namespace
}  // namespace memloom::kernels
