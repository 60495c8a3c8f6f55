// HAL conformance: MemoryDomain (segments, VA ranges, export/import, user memory, capacity), in one
// process and shared between forked ranks that meet through the config store.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "src/core/store_bootstrap.h"
#include "src/store/client.h"
#include "tests/hal/hal_test_helpers.h"
#include "tests/support/multi_process.h"

namespace memloom::hal_test {
namespace {

using hal::MemoryKind;

TEST(MemoryDomain, GranularityIsAPowerOfTwo) {
  for (MemoryKind kind : {MemoryKind::kDevice, MemoryKind::kHost}) {
    const size_t g = domain().granularity(kind);
    EXPECT_GE(g, 4096u);
    EXPECT_EQ(g & (g - 1), 0u) << g;
  }
}

TEST(MemoryDomain, AllocatesDeviceAndHostSegments) {
  const size_t size = round_up(3 << 20);
  auto device = domain().allocate(MemoryKind::kDevice, platform().current_device(), size);
  EXPECT_EQ(device->size(), size);
  EXPECT_EQ(device->kind(), MemoryKind::kDevice);
  EXPECT_EQ(device->device(), platform().current_device());
  auto host = domain().allocate(MemoryKind::kHost, -1, round_up(size, MemoryKind::kHost));
  EXPECT_EQ(host->kind(), MemoryKind::kHost);
  EXPECT_EQ(host->device(), -1);
}

TEST(MemoryDomain, DeviceMemoryRoundTripsThroughCopies) {
  auto stream = platform().create_stream(platform().current_device());
  const size_t bytes = (2u << 20) + 123;
  MappedSegment device(MemoryKind::kDevice, bytes);
  HostBuffer source(bytes);
  for (size_t i = 0; i < bytes; ++i) source[i] = kernels::fill_pattern_byte(42, i);
  stream->copy(device.address, source.data(), bytes);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, device.address, bytes), 42), -1);
}

TEST(MemoryDomain, HostSegmentsAreReadableAndWritableInPlace) {
  const size_t bytes = round_up(1 << 20, MemoryKind::kHost);
  MappedSegment host(MemoryKind::kHost, bytes);
  for (size_t i = 0; i < bytes; ++i) host.address[i] = kernels::fill_pattern_byte(9, i);
  auto stream = platform().create_stream(platform().current_device());
  // A second mapping of the same segment sees the same bytes.
  auto* again = static_cast<uint8_t*>(domain().map_anywhere(*host.segment));
  EXPECT_NE(again, host.address);
  EXPECT_EQ(std::memcmp(again, host.address, bytes), 0);
  again[17] = 0xAB;
  EXPECT_EQ(host.address[17], 0xAB);
  domain().unmap_anywhere(again, bytes);
}

// WholeMemory's contiguous host ranges map every rank's segment side by side, and a rank's rows may
// start in the segment before its own. A copy across the seams works as one (the CUDA backend cuts
// it: CUDA refuses one copy whose host side runs from one page-locked registration into the next).
TEST(MemoryDomain, CopiesCrossTheSeamsOfHostSegmentsMappedSideBySide) {
  const size_t g = domain().granularity(MemoryKind::kHost);
  auto stream = platform().create_stream(platform().current_device());
  auto range = domain().reserve(3 * g);
  std::vector<std::unique_ptr<hal::Segment>> segments;
  for (size_t i = 0; i < 3; ++i) {
    segments.push_back(domain().allocate(MemoryKind::kHost, -1, g));
    range->map(i * g, *segments.back());
  }
  // From the middle of the first segment to the middle of the third.
  auto* seams = static_cast<uint8_t*>(range->base()) + g / 2;
  const size_t bytes = 2 * g;
  std::vector<uint8_t> pageable(bytes);
  for (size_t i = 0; i < bytes; ++i) pageable[i] = kernels::fill_pattern_byte(31, i);
  stream->copy(seams, pageable.data(), bytes);
  stream->synchronize(soon());
  EXPECT_EQ(std::memcmp(seams, pageable.data(), bytes), 0) << "pageable memory into the seams";
  MappedSegment device(MemoryKind::kDevice, bytes);
  stream->copy(device.address, seams, bytes);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, device.address, bytes), 31), -1)
      << "the seams to device memory";
  HostBuffer registered(bytes, 0x5A);
  stream->copy(seams, registered.data(), bytes);
  EXPECT_EQ(read_back(*stream, seams, bytes), std::vector<uint8_t>(bytes, 0x5A))
      << "registered memory into the seams and back out";
}

TEST(MemoryDomain, VaRangeMapsSegmentsAtOffsets) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  const int device = platform().current_device();
  auto stream = platform().create_stream(device);
  auto range = domain().reserve(4 * g);
  EXPECT_NE(range->base(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(range->base()) % g, 0u);
  EXPECT_EQ(range->size(), 4 * g);
  auto first = domain().allocate(MemoryKind::kDevice, device, g);
  auto second = domain().allocate(MemoryKind::kDevice, device, 2 * g);
  range->map(0, *first);
  range->map(2 * g, *second);  // leaves a hole at [g, 2g)
  auto* base = static_cast<uint8_t*>(range->base());
  launch_fill(*stream, base, g, 1);
  launch_fill(*stream, base + 2 * g, 2 * g, 2);
  stream->synchronize(soon());

  // The bytes live in the segments: a separate mapping of each shows them.
  auto* first_view = domain().map_anywhere(*first);
  auto* second_view = domain().map_anywhere(*second);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, first_view, g), 1), -1);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, second_view, 2 * g), 2), -1);
  domain().unmap_anywhere(first_view, g);
  domain().unmap_anywhere(second_view, 2 * g);
}

TEST(MemoryDomain, UnmapLeavesTheRangeReusable) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  const int device = platform().current_device();
  auto stream = platform().create_stream(device);
  auto range = domain().reserve(2 * g);
  auto a = domain().allocate(MemoryKind::kDevice, device, g);
  auto b = domain().allocate(MemoryKind::kDevice, device, g);
  range->map(g, *a);
  range->unmap(g, g);
  EXPECT_STATUS(Status::kInvalidInput, range->unmap(g, g));  // nothing there any more
  range->map(g, *b);
  auto* address = static_cast<uint8_t*>(range->base()) + g;
  launch_fill(*stream, address, g, 31);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, address, g), 31), -1);
  // Unmapping a span holding two whole mappings at once.
  range->map(0, *a);
  range->unmap(0, 2 * g);
  range->map(0, *b);
}

TEST(MemoryDomain, MappingOutlivesItsSegmentObject) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  auto stream = platform().create_stream(platform().current_device());
  auto range = domain().reserve(g);
  {
    auto segment = domain().allocate(MemoryKind::kDevice, platform().current_device(), g);
    range->map(0, *segment);
  }  // the memory stays alive while mapped, as a released CUDA handle does
  launch_fill(*stream, range->base(), g, 8);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, range->base(), g), 8), -1);
}

TEST(MemoryDomain, RejectsBadSizesAndOffsets) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  const int device = platform().current_device();
  EXPECT_STATUS(Status::kInvalidInput, domain().allocate(MemoryKind::kDevice, device, 0));
  EXPECT_STATUS(Status::kInvalidInput, domain().allocate(MemoryKind::kDevice, device, g + 1));
  EXPECT_STATUS(Status::kInvalidInput, domain().allocate(MemoryKind::kDevice, device, g / 2));
  EXPECT_STATUS(Status::kInvalidInput, domain().allocate(MemoryKind::kHost, -1, g + 1));
  EXPECT_STATUS(Status::kInvalidInput, domain().allocate(MemoryKind::kDevice, -1, g));
  EXPECT_STATUS(Status::kInvalidInput,
                domain().allocate(MemoryKind::kDevice, platform().device_count(), g));
  EXPECT_STATUS(Status::kInvalidInput, domain().reserve(0));
  EXPECT_STATUS(Status::kInvalidInput, domain().reserve(g + 1));

  auto range = domain().reserve(4 * g);
  auto one = domain().allocate(MemoryKind::kDevice, device, g);
  auto two = domain().allocate(MemoryKind::kDevice, device, 2 * g);
  EXPECT_STATUS(Status::kInvalidInput, range->map(1, *one));
  EXPECT_STATUS(Status::kInvalidInput, range->map(g / 2, *one));
  EXPECT_STATUS(Status::kInvalidInput, range->map(4 * g, *one));               // starts at the end
  EXPECT_STATUS(Status::kInvalidInput, range->map(3 * g, *two));               // runs past the end
  EXPECT_STATUS(Status::kInvalidInput, range->map(~size_t{0} - g + 1, *one));  // wraps around
  range->map(g, *two);
  EXPECT_STATUS(Status::kInvalidInput, range->map(g, *one));      // same start
  EXPECT_STATUS(Status::kInvalidInput, range->map(2 * g, *one));  // inside
  EXPECT_STATUS(Status::kInvalidInput, range->map(0, *two));      // overlaps the start
  EXPECT_STATUS(Status::kInvalidInput, range->unmap(g, g));       // half a mapping
  EXPECT_STATUS(Status::kInvalidInput, range->unmap(2 * g, g));   // the other half
  EXPECT_STATUS(Status::kInvalidInput, range->unmap(0, g));       // nothing mapped
  EXPECT_STATUS(Status::kInvalidInput, range->unmap(g, 8 * g));   // past the end
  EXPECT_STATUS(Status::kSuccess, range->map(0, *one));           // the hole still fits
  EXPECT_STATUS(Status::kSuccess, range->map(3 * g, *one));       // so does the tail

  EXPECT_STATUS(Status::kInvalidInput, domain().unmap_anywhere(range->base(), g));
  void* anywhere = domain().map_anywhere(*one);
  EXPECT_STATUS(Status::kInvalidInput, domain().unmap_anywhere(anywhere, 2 * g));
  EXPECT_STATUS(Status::kSuccess, domain().unmap_anywhere(anywhere, g));
  EXPECT_STATUS(Status::kInvalidInput, domain().unmap_anywhere(anywhere, g));  // twice
}

// Requests no device or host could hold fail at once with kOutOfMemory, committing nothing.
TEST(MemoryDomain, ImpossibleAllocationsFailCleanly) {
  const int device = platform().current_device();
  const size_t g = domain().granularity(MemoryKind::kDevice);
  const size_t too_big = round_up(platform().device_capacity(device) + g);
  EXPECT_STATUS(Status::kOutOfMemory, domain().allocate(MemoryKind::kDevice, device, too_big));
  EXPECT_STATUS(
      Status::kOutOfMemory,
      domain().allocate(MemoryKind::kHost, -1, round_up(size_t{1} << 50, MemoryKind::kHost)));
}

TEST(MemoryDomain, ReservesAtAFreeFixedAddress) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  void* address = nullptr;
  {
    auto probe = domain().reserve(8 * g);
    address = probe->base();
  }  // released: the address is free again
  auto range = domain().reserve(8 * g, address);
  EXPECT_EQ(range->base(), address);
}

TEST(MemoryDomain, FixedAddressInUseIsNotSupported) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  auto taken = domain().reserve(4 * g);
  auto* base = static_cast<uint8_t*>(taken->base());
  EXPECT_STATUS(Status::kNotSupported, domain().reserve(4 * g, base));
  EXPECT_STATUS(Status::kNotSupported, domain().reserve(4 * g, base + 2 * g));  // partly taken
  EXPECT_STATUS(Status::kInvalidInput, domain().reserve(g, base + 1));          // misaligned
}

TEST(MemoryDomain, ExportImportInOneProcessSharesTheBytes) {
  const size_t g = domain().granularity(MemoryKind::kHost);
  auto original = domain().allocate(MemoryKind::kHost, -1, 2 * g);
  hal::ExportedSegment exported = domain().export_segment(*original);
  EXPECT_FALSE(exported.descriptor.empty());
  auto imported = domain().import_segment(std::move(exported));
  EXPECT_EQ(imported->size(), 2 * g);
  EXPECT_EQ(imported->kind(), MemoryKind::kHost);
  auto* a = static_cast<uint8_t*>(domain().map_anywhere(*original));
  auto* b = static_cast<uint8_t*>(domain().map_anywhere(*imported));
  a[0] = 1;
  b[2 * g - 1] = 2;
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(a[2 * g - 1], 2);
  domain().unmap_anywhere(a, 2 * g);
  domain().unmap_anywhere(b, 2 * g);
}

TEST(MemoryDomain, ImportedDeviceSegmentKeepsItsIdentity) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  const int device = platform().device_count() - 1;
  auto original = domain().allocate(MemoryKind::kDevice, device, g);
  auto imported = domain().import_segment(domain().export_segment(*original));
  EXPECT_EQ(imported->kind(), MemoryKind::kDevice);
  EXPECT_EQ(imported->device(), device);
  EXPECT_EQ(imported->size(), g);
}

TEST(MemoryDomain, GarbageDescriptorsAreRejected) {
  const size_t g = domain().granularity(MemoryKind::kDevice);
  auto segment = domain().allocate(MemoryKind::kDevice, platform().current_device(), g);
  const hal::ExportedSegment good = domain().export_segment(*segment);
  auto import_with = [&](std::vector<uint8_t> descriptor) {
    hal::ExportedSegment attempt;
    attempt.descriptor = std::move(descriptor);
    attempt.fd = ::dup(good.fd);
    return status_of([&] { domain().import_segment(std::move(attempt)); });
  };
  EXPECT_EQ(import_with({}), Status::kInvalidInput);
  EXPECT_EQ(import_with({1, 2, 3}), Status::kInvalidInput);
  EXPECT_EQ(import_with(std::vector<uint8_t>(good.descriptor.size(), 0)), Status::kInvalidInput);
  EXPECT_EQ(import_with(std::vector<uint8_t>(good.descriptor.size(), 0xFF)), Status::kInvalidInput);
  auto truncated = good.descriptor;
  truncated.pop_back();
  EXPECT_EQ(import_with(truncated), Status::kInvalidInput);
  auto longer = good.descriptor;
  longer.push_back(0);
  EXPECT_EQ(import_with(longer), Status::kInvalidInput);
  ::close(good.fd);
}

TEST(MemoryDomain, UserMemoryRegistration) {
  std::vector<uint8_t> memory(64 * 1024, 3);
  uint8_t* p = memory.data();
  EXPECT_STATUS(Status::kSuccess, domain().register_user_memory(p, 4096));
  EXPECT_STATUS(Status::kSuccess, domain().register_user_memory(p, 4096));  // same range: no-op
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(p, 8192));      // grows it
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(p + 100, 16));  // inside
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(p, 1));         // shrinks it
  EXPECT_STATUS(Status::kSuccess, domain().register_user_memory(p + 4096, 4096));    // adjacent
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(nullptr, 16));
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(p + 20000, 0));
  EXPECT_STATUS(Status::kInvalidInput, domain().unregister_user_memory(p + 1));
  EXPECT_STATUS(Status::kInvalidInput, domain().unregister_user_memory(p + 20000));

  // Registered memory works as a copy endpoint.
  auto stream = platform().create_stream(platform().current_device());
  MappedSegment device(MemoryKind::kDevice, 4096);
  stream->copy(device.address, p, 4096);
  stream->copy(p + 4096, device.address, 4096);
  stream->synchronize(soon());
  EXPECT_EQ(std::memcmp(p, p + 4096, 4096), 0);

  EXPECT_STATUS(Status::kSuccess, domain().unregister_user_memory(p));
  EXPECT_STATUS(Status::kInvalidInput, domain().unregister_user_memory(p));  // already gone
  EXPECT_STATUS(Status::kSuccess, domain().unregister_user_memory(p + 4096));
  // Once unregistered, the memory can be registered again with other bounds.
  EXPECT_STATUS(Status::kSuccess, domain().register_user_memory(p, 8192));
  EXPECT_STATUS(Status::kInvalidInput, domain().register_user_memory(p + 4096, 4096));
  EXPECT_STATUS(Status::kSuccess, domain().unregister_user_memory(p));
}

TEST(MemoryDomain, UnmappedUserMemoryIsRejected) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  hal::MemoryDomain& memory_domain = domain();  // opened first: its own mappings come before
  // A page in the middle of a 1 GiB hole: a mapping made meanwhile (ASan's allocator, a thread's
  // stack) takes the top of the hole, while a one-page hole was reused at once under ASan.
  constexpr size_t kSpan = size_t{1} << 30;
  void* area =
      ::mmap(nullptr, kSpan, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(area, MAP_FAILED);
  ::munmap(area, kSpan);
  void* hole = static_cast<char*>(area) + kSpan / 2;
  EXPECT_STATUS(Status::kInvalidInput, memory_domain.register_user_memory(hole, page));
}

// In a child with small emulated devices (the variable is ignored by the CUDA backend, whose
// capacity is the GPU's): allocate quarters of a device until it is full, then free one.
TEST(MemoryDomain, DeviceCapacityRunsOutAndComesBack) {
  testing::MultiProcessOptions options;
  options.ranks = 1;
  options.start_store = false;
  options.env["MEMLOOM_EMU_DEVICE_MEM"] = "64M";
  auto results = testing::run_ranks(options, [](const testing::RankContext&) {
    const int device = fresh_platform().current_device();
    const size_t g = domain().granularity(MemoryKind::kDevice);
    const size_t quarter = platform().device_capacity(device) / 4 / g * g;
    ASSERT_GT(quarter, 0u);
    std::vector<std::unique_ptr<hal::Segment>> held;
    Status last = Status::kSuccess;
    std::string message;
    while (held.size() < 8) {
      try {
        held.push_back(domain().allocate(MemoryKind::kDevice, device, quarter));
      } catch (const Error& error) {
        last = error.status();
        message = error.what();
        break;
      }
    }
    ASSERT_EQ(last, Status::kOutOfMemory) << "allocated " << held.size() << " quarters";
    EXPECT_GE(held.size(), 3u);
    EXPECT_FALSE(message.empty());
    EXPECT_STATUS(Status::kOutOfMemory, domain().allocate(MemoryKind::kDevice, device, quarter));
    // Other devices and host memory are not affected.
    if (platform().device_count() > 1) {
      const int other = (device + 1) % platform().device_count();
      EXPECT_STATUS(Status::kSuccess, domain().allocate(MemoryKind::kDevice, other, quarter));
    }
    EXPECT_STATUS(Status::kSuccess, domain().allocate(MemoryKind::kHost, -1, round_up(1 << 20)));

    // A freed segment gives its capacity back, but only once no mapping holds it any more.
    void* view = domain().map_anywhere(*held.back());
    held.pop_back();
    EXPECT_STATUS(Status::kOutOfMemory, domain().allocate(MemoryKind::kDevice, device, quarter));
    domain().unmap_anywhere(view, quarter);
    EXPECT_STATUS(Status::kSuccess,
                  held.push_back(domain().allocate(MemoryKind::kDevice, device, quarter)));
    auto range = domain().reserve(quarter);
    range->map(0, *held.back());
    held.pop_back();
    EXPECT_STATUS(Status::kOutOfMemory, domain().allocate(MemoryKind::kDevice, device, quarter));
    range.reset();
    EXPECT_STATUS(Status::kSuccess, domain().allocate(MemoryKind::kDevice, device, quarter));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// ---------------------------------------------------------------------------------------------
// Sharing between processes: ranks exchange descriptors through the config store and fds through
// the FdBroker, exactly as the core does.

std::string to_hex(const std::vector<uint8_t>& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : bytes) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 15]);
  }
  return text;
}

std::vector<uint8_t> from_hex(const std::string& text) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// What a rank of a sharing test needs: its store connection and a bootstrap over it.
struct RankRendezvous {
  std::unique_ptr<store::Client> client;
  std::unique_ptr<core::StoreBootstrap> bootstrap;
  int rank;
  int size;

  explicit RankRendezvous(const testing::RankContext& context)
      : client(store::Client::connect(context.store_url)),
        bootstrap(std::make_unique<core::StoreBootstrap>(
            *client, store::KeyPrefix(context.job_id + "/hal/"))),
        rank(context.rank),
        size(context.world_size) {}

  void barrier(const std::string& name) {
    bootstrap->put(name + "/" + std::to_string(rank), "1");
    for (int r = 0; r < size; ++r) bootstrap->wait_get(name + "/" + std::to_string(r), soon());
  }

  // Exports `segment` to the other ranks; returns the fd token to withdraw once they imported it.
  std::string publish(const hal::Segment& segment) {
    hal::ExportedSegment exported = domain().export_segment(segment);
    std::string token;
    if (exported.fd >= 0) {
      token = bootstrap->publish_fd(exported.fd);
      ::close(exported.fd);
    }
    bootstrap->put("segment/" + std::to_string(rank), to_hex(exported.descriptor) + " " + token);
    return token;
  }

  std::unique_ptr<hal::Segment> import(int from) {
    std::istringstream entry(bootstrap->wait_get("segment/" + std::to_string(from), soon()));
    std::string descriptor, token;
    entry >> descriptor >> token;
    hal::ExportedSegment exported;
    exported.descriptor = from_hex(descriptor);
    if (!token.empty()) exported.fd = bootstrap->fetch_fd(token, soon());
    return domain().import_segment(std::move(exported));
  }
};

testing::MultiProcessOptions sharing_options(int ranks) {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.timeout = std::chrono::seconds(60);
  return options;
}

// Rank 0 allocates and writes; rank 1 imports, checks and writes back; rank 0 sees that write.
void export_import_between_two_ranks(MemoryKind kind) {
  auto results =
      testing::run_ranks(sharing_options(2), [kind](const testing::RankContext& context) {
        fresh_platform();
        RankRendezvous meet(context);
        auto stream = platform().create_stream(platform().current_device());
        const size_t half = domain().granularity(kind);
        if (context.rank == 0) {
          MappedSegment mine(kind, 2 * half);
          launch_fill(*stream, mine.address, half, 1);
          stream->synchronize(soon());
          const std::string token = meet.publish(*mine.segment);
          meet.barrier("written-by-0");
          meet.barrier("written-by-1");
          meet.bootstrap->withdraw_fd(token);
          EXPECT_EQ(first_pattern_mismatch(read_back(*stream, mine.address + half, half), 2), -1);
        } else {
          auto imported = meet.import(0);
          EXPECT_EQ(imported->size(), 2 * half);
          EXPECT_EQ(imported->kind(), kind);
          auto* view = static_cast<uint8_t*>(domain().map_anywhere(*imported));
          meet.barrier("written-by-0");
          EXPECT_EQ(first_pattern_mismatch(read_back(*stream, view, half), 1), -1);
          launch_fill(*stream, view + half, half, 2);
          stream->synchronize(soon());
          meet.barrier("written-by-1");
          domain().unmap_anywhere(view, 2 * half);
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(MemorySharing, DeviceSegmentAcrossProcesses) {
  export_import_between_two_ranks(MemoryKind::kDevice);
}

TEST(MemorySharing, HostSegmentAcrossProcesses) {
  export_import_between_two_ranks(MemoryKind::kHost);
}

// Four ranks each allocate one segment; every rank maps all four back to back in one VaRange at the
// same fixed address (the global virtual address space of BM and SHM), then reads what the others
// wrote through it.
TEST(MemorySharing, FourRanksMapOneRangeAtTheSameAddress) {
  constexpr int kRanks = 4;
  auto results =
      testing::run_ranks(sharing_options(kRanks), [](const testing::RankContext& context) {
        fresh_platform();
        RankRendezvous meet(context);
        auto stream = platform().create_stream(platform().current_device());
        const size_t slot = 4 * domain().granularity(MemoryKind::kDevice);
        // In the middle of the 47-bit user address space: away from the heap and from the top-down
        // mmap area, so free in each forked rank (the core picks candidates the same way).
        void* const fixed = reinterpret_cast<void*>(0x3a0000000000ull);
        auto range = domain().reserve(kRanks * slot, fixed);
        ASSERT_EQ(range->base(), fixed);
        auto* base = static_cast<uint8_t*>(range->base());

        auto mine = domain().allocate(MemoryKind::kDevice, platform().current_device(), slot);
        range->map(context.rank * slot, *mine);
        launch_fill(*stream, base + context.rank * slot, slot, 100 + context.rank);
        stream->synchronize(soon());
        const std::string token = meet.publish(*mine);
        std::vector<std::unique_ptr<hal::Segment>> peers;
        for (int r = 0; r < kRanks; ++r) {
          if (r == context.rank) continue;
          peers.push_back(meet.import(r));
          range->map(r * slot, *peers.back());
        }
        meet.barrier("mapped");
        meet.bootstrap->withdraw_fd(token);
        for (int r = 0; r < kRanks; ++r) {
          EXPECT_EQ(first_pattern_mismatch(read_back(*stream, base + r * slot, slot), 100 + r), -1)
              << "slot " << r << " seen by rank " << context.rank;
        }
        meet.barrier("read");
        // Each rank now overwrites the next rank's slot through the shared addresses.
        const int next = (context.rank + 1) % kRanks;
        launch_fill(*stream, base + next * slot, slot, 200 + context.rank);
        stream->synchronize(soon());
        meet.barrier("overwritten");
        for (int r = 0; r < kRanks; ++r) {
          const int writer = (r + kRanks - 1) % kRanks;
          EXPECT_EQ(first_pattern_mismatch(read_back(*stream, base + r * slot, slot), 200 + writer),
                    -1)
              << "slot " << r << " seen by rank " << context.rank;
        }
        meet.barrier("done");
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::hal_test
