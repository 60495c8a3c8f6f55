#include "tests/wholememory_ops/ops_test_support.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <string>

#include "src/kernels/element_types.h"
#include "tests/support/multi_process.h"

namespace memloom::opstest {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

size_t element_size(wholememory_dtype_t dtype) {
  return wholememory_dtype_get_element_size(dtype);
}

constexpr uint8_t kSentinel = 0xA5;

std::string hex(const Bytes& bytes) {
  std::string text = "0x";
  char digits[4];
  for (size_t i = bytes.size(); i-- > 0;) {
    std::snprintf(digits, sizeof(digits), "%02x", bytes[i]);
    text += digits;
  }
  return text;
}

}  // namespace

std::string table_case_name(const ::testing::TestParamInfo<TableCase>& info) {
  static const char* types[] = {"None", "Continuous", "Chunked", "Distributed", "Hierarchy"};
  const auto& c = info.param;
  return std::string(types[c.type]) + (c.location == WHOLEMEMORY_ML_DEVICE ? "Device" : "Host") +
         std::to_string(c.ranks) + "Ranks" + std::to_string(c.nodes) + "Nodes";
}

void run_in_one_rank(const std::function<void()>& body) {
  testing::MultiProcessOptions options;
  options.ranks = 1;
  options.start_store = false;
  options.timeout = std::chrono::milliseconds(60000);
  auto results = testing::run_ranks(options, [&](const testing::RankContext&) { body(); });
  EXPECT_ALL_RANKS_PASS(results);
}

uint64_t run_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* fixed = std::getenv("MEMLOOM_TEST_SEED"))
      return std::strtoull(fixed, nullptr, 0);
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return seed;
}

// Drawn at start-up, in the test process, so that the forked ranks of a test all share it.
const uint64_t g_seed_at_startup = [] {
  const uint64_t seed = run_seed();
  std::printf("wholememory_ops_tests: MEMLOOM_TEST_SEED=%llu\n",
              static_cast<unsigned long long>(seed));
  return seed;
}();

Bytes element_value(uint64_t seed, int64_t entry, int64_t column, wholememory_dtype_t dtype) {
  uint64_t h = mix(
      seed ^ mix(static_cast<uint64_t>(entry) * 0x100000001B3ull + static_cast<uint64_t>(column)));
  switch (dtype) {
    case WHOLEMEMORY_DT_FLOAT: {  // exponents around 1 so conversions to half round and overflow
      h = (h & 0x807fffffull) | ((100 + (h >> 32) % 55) << 23);
      break;
    }
    case WHOLEMEMORY_DT_DOUBLE:
      h = (h & 0x800fffffffffffffull) | ((1000 + (h >> 52) % 47) << 52);
      break;
    case WHOLEMEMORY_DT_HALF:
      if (((h >> 10) & 0x1f) == 0x1f) h &= ~(1ull << 14);  // no infinity or NaN
      break;
    case WHOLEMEMORY_DT_BF16:
      if (((h >> 7) & 0xff) == 0xff) h &= ~(1ull << 14);
      break;
    default:
      break;
  }
  Bytes bytes(element_size(dtype));
  std::memcpy(bytes.data(), &h, bytes.size());
  return bytes;
}

Bytes converted(const Bytes& element, wholememory_dtype_t from, wholememory_dtype_t to) {
  if (from == to) return element;
  Bytes out(element_size(to));
  const bool ok =
      kernels::convert_elements(static_cast<kernels::DType>(from), static_cast<kernels::DType>(to),
                                element.data(), out.data(), 1);
  EXPECT_TRUE(ok) << "no conversion from " << from << " to " << to;
  return out;
}

UserBuffer::UserBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  auto* env = get_default_env_func();
  env->temporary_fns.create_memory_context_fn(&context_, nullptr);
  wholememory_tensor_description_t desc =
      array_desc(static_cast<int64_t>(bytes), 0, WHOLEMEMORY_DT_INT8);
  data_ = env->output_fns.malloc_fn(&desc, WHOLEMEMORY_MA_DEVICE, context_, nullptr);
  if (data_ == nullptr) ADD_FAILURE() << "cannot allocate " << bytes << " bytes of device memory";
}

UserBuffer::~UserBuffer() {
  if (bytes_ == 0) return;
  auto* env = get_default_env_func();
  env->output_fns.free_fn(context_, nullptr);
  env->temporary_fns.destroy_memory_context_fn(context_, nullptr);
}

void UserBuffer::upload(const Bytes& bytes) {
  ASSERT_LE(bytes.size(), bytes_);
  if (!bytes.empty()) wmtest::write_memory(data_, bytes.data(), bytes.size());
}

Bytes UserBuffer::download() const {
  Bytes bytes(bytes_);
  if (bytes_ > 0) wmtest::read_memory(bytes.data(), data_, bytes_);
  return bytes;
}

wholememory_tensor_description_t matrix_desc(int64_t rows, int64_t columns, int64_t stride,
                                             int64_t offset, wholememory_dtype_t dtype) {
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = 2;
  desc.sizes[0] = rows;
  desc.sizes[1] = columns;
  desc.strides[0] = stride;
  desc.strides[1] = 1;
  desc.storage_offset = offset;
  desc.dtype = dtype;
  return desc;
}

wholememory_tensor_description_t array_desc(int64_t size, int64_t offset,
                                            wholememory_dtype_t dtype) {
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = 1;
  desc.sizes[0] = size;
  desc.strides[0] = 1;
  desc.storage_offset = offset;
  desc.dtype = dtype;
  return desc;
}

RootValue seeded_values(uint64_t seed, wholememory_dtype_t dtype) {
  return [seed, dtype](int64_t row, int64_t column) {
    return element_value(seed, row, column, dtype);
  };
}

void fill_table(wholememory_tensor_t root, const RootValue& values, wholememory_comm_t comm) {
  wholememory_tensor_t local = nullptr;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_tensor_map_local_tensor(root, &local));
  const auto desc = *wholememory_tensor_get_tensor_description(local);
  const int64_t stride = desc.dim == 2 ? desc.strides[0] : 1;
  const int64_t columns = desc.dim == 2 ? desc.sizes[1] : 1;
  size_t first = 0;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_tensor_get_local_entry_start(&first, root));
  const size_t size = element_size(desc.dtype);
  Bytes bytes(static_cast<size_t>(desc.sizes[0] * stride) * size, 0xEE);  // padding: junk
  for (int64_t r = 0; r < desc.sizes[0]; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      const Bytes value = values(static_cast<int64_t>(first) + r, c);
      std::memcpy(bytes.data() + (r * stride + c) * size, value.data(), size);
    }
  }
  if (!bytes.empty()) {
    wmtest::write_memory(wholememory_tensor_get_data_pointer(local), bytes.data(), bytes.size());
  }
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(local));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_communicator_barrier(comm));
}

std::vector<int64_t> random_indices(std::mt19937_64& rng, size_t count, int64_t rows,
                                    int negative_every) {
  std::vector<int64_t> indices(count);
  std::uniform_int_distribution<int64_t> row(0, rows - 1);
  for (auto& index : indices) {
    index = row(rng);
    if (negative_every > 0 && rng() % negative_every == 0)
      index = -1 - static_cast<int64_t>(rng() % 3);
  }
  return indices;
}

std::vector<int64_t> every_row(int64_t rows) {
  std::vector<int64_t> indices(static_cast<size_t>(rows));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return indices;
}

namespace {

// A 1-D index tensor over device memory holding `indices` as `dtype`.
struct IndexOperand {
  UserBuffer buffer;
  wholememory_tensor_t tensor = nullptr;
  IndexOperand(const std::vector<int64_t>& indices, wholememory_dtype_t dtype)
      : buffer(std::max<size_t>(indices.size(), 1) * element_size(dtype)) {
    Bytes bytes(indices.size() * element_size(dtype));
    for (size_t i = 0; i < indices.size(); ++i) {
      if (dtype == WHOLEMEMORY_DT_INT) {
        const auto value = static_cast<int32_t>(indices[i]);
        std::memcpy(bytes.data() + i * 4, &value, 4);
      } else {
        std::memcpy(bytes.data() + i * 8, &indices[i], 8);
      }
    }
    buffer.upload(bytes);
    auto desc = array_desc(static_cast<int64_t>(indices.size()), 0, dtype);
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_make_tensor_from_pointer(&tensor, buffer.data(), &desc));
  }
  ~IndexOperand() { EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(tensor)); }
};

// The matrix of `rows` rows in `layout` matching `table`'s shape: its description and storage size.
struct RowsShape {
  wholememory_tensor_description_t desc;
  int64_t columns;
  int64_t stride;
  size_t bytes;
};

RowsShape rows_shape(const wholememory_tensor_description_t& table, int64_t rows,
                     const OutputLayout& layout) {
  RowsShape shape;
  const size_t size = element_size(layout.dtype);
  if (table.dim == 2) {
    shape.columns = table.sizes[1];
    shape.stride = shape.columns + layout.padding;
    shape.desc = matrix_desc(rows, shape.columns, shape.stride, layout.offset, layout.dtype);
  } else {
    shape.columns = 1;
    shape.stride = 1;
    shape.desc = array_desc(rows, layout.offset, layout.dtype);
  }
  shape.bytes = static_cast<size_t>(layout.offset + rows * shape.stride + 1) * size;
  return shape;
}

}  // namespace

void check_gather(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                  const OutputLayout& layout, const RootValue& values, memloom_stream_t stream) {
  const auto table_desc = *wholememory_tensor_get_tensor_description(table);
  const auto n = static_cast<int64_t>(indices.size());
  const int64_t table_stride = table_desc.dim == 2 ? table_desc.strides[0] : 1;
  IndexOperand index(indices, layout.index_dtype);
  const RowsShape shape = rows_shape(table_desc, n, layout);
  UserBuffer out(shape.bytes);
  out.upload(Bytes(shape.bytes, kSentinel));
  auto desc = shape.desc;
  wholememory_tensor_t output = nullptr;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_make_tensor_from_pointer(&output, out.data(), &desc));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_gather(table, index.tensor, output, nullptr, stream));
  EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(output));

  const Bytes got = out.download();
  const size_t size = element_size(layout.dtype);
  const Bytes sentinel(size, kSentinel);
  size_t mismatches = 0;
  std::string first;
  auto check = [&](size_t element, const Bytes& expected, const std::string& where) {
    const Bytes seen(got.begin() + element * size, got.begin() + (element + 1) * size);
    if (seen == expected) return;
    if (mismatches++ == 0) first = where + ": expected " + hex(expected) + ", got " + hex(seen);
  };
  for (int64_t e = 0; e < layout.offset; ++e) check(e, sentinel, "before the output");
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < shape.stride; ++c) {
      const size_t element = static_cast<size_t>(layout.offset + i * shape.stride + c);
      const std::string where = "row " + std::to_string(i) + " (index " +
                                std::to_string(indices[i]) + ") column " + std::to_string(c);
      if (c >= shape.columns || indices[i] < 0) {
        check(element, sentinel, where + " (must stay untouched)");
        continue;
      }
      const int64_t position = table_desc.storage_offset + indices[i] * table_stride + c;
      check(element,
            converted(values(position / table_stride, position % table_stride), table_desc.dtype,
                      layout.dtype),
            where);
    }
  }
  EXPECT_EQ(0u, mismatches) << "gather of " << n << " rows from dtype " << table_desc.dtype
                            << " to " << layout.dtype << " (indices of dtype " << layout.index_dtype
                            << "), first mismatch: " << first
                            << " [MEMLOOM_TEST_SEED=" << run_seed() << "]";
}

Bytes scatter_value(uint64_t seed, int64_t row, int64_t column, wholememory_dtype_t dtype) {
  return element_value(seed ^ 0x5ca77e5ull, row, column, dtype);
}

void scatter_rows(wholememory_tensor_t table, const std::vector<int64_t>& indices,
                  const OutputLayout& input, uint64_t seed, memloom_stream_t stream) {
  const auto table_desc = *wholememory_tensor_get_tensor_description(table);
  const auto n = static_cast<int64_t>(indices.size());
  IndexOperand index(indices, input.index_dtype);
  const RowsShape shape = rows_shape(table_desc, n, input);
  const size_t size = element_size(input.dtype);
  Bytes bytes(shape.bytes, kSentinel);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < shape.columns; ++c) {
      const Bytes value = scatter_value(seed, indices[i], c, input.dtype);
      std::memcpy(bytes.data() + (input.offset + i * shape.stride + c) * size, value.data(), size);
    }
  }
  UserBuffer in(shape.bytes);
  in.upload(bytes);
  auto desc = shape.desc;
  wholememory_tensor_t tensor = nullptr;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_make_tensor_from_pointer(&tensor, in.data(), &desc));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_scatter(tensor, index.tensor, table, nullptr, stream));
  EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(tensor));
}

RootValue after_scatter(wholememory_tensor_t table, const std::vector<int64_t>& written,
                        wholememory_dtype_t input, uint64_t seed, const RootValue& before) {
  const auto desc = *wholememory_tensor_get_tensor_description(table);
  const int64_t stride = desc.dim == 2 ? desc.strides[0] : 1;
  const int64_t columns = desc.dim == 2 ? desc.sizes[1] : 1;
  std::set<int64_t> rows;
  for (int64_t index : written) {
    if (index >= 0) rows.insert(index);
  }
  return [=](int64_t row, int64_t column) {
    const int64_t from_start = row * stride + column - desc.storage_offset;
    if (from_start >= 0) {
      const int64_t r = from_start / stride, c = from_start % stride;
      if (r < desc.sizes[0] && c < columns && rows.count(r) > 0) {
        return converted(scatter_value(seed, r, c, input), input, desc.dtype);
      }
    }
    return before(row, column);
  };
}

}  // namespace memloom::opstest
