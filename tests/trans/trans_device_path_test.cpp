// The same-node device path (src/smem/trans/device_path.h), exercised without a GPU: a memory
// domain that "exports" memfd-backed buffers as device ranges stands in for the CUDA one, so the
// export published in the region table, the fd fetched from the owner, the import cached per
// region, the stream copies under region holds and every fallback to the staged TCP path run as
// they do between two GPU processes. (On GPUs, TransDeviceMemory and the CUDA run of the whole
// suite cover the real domain.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/smem/trans/region_table.h"
#include "src/smem/trans/trans_engine.h"
#include "tests/support/multi_process.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

using smem::trans::Direction;
using smem::trans::Engine;
using smem::trans::EngineOptions;
using smem::trans::TransferEntry;

constexpr size_t kExported = 4u << 20;  // the "device" buffer
constexpr size_t kPlain = 1u << 20;     // host memory the domain does not export
constexpr size_t kChunk = 1u << 20;

struct RangeDescriptor {
  uint64_t magic;
  uint64_t offset;
  uint64_t size;
  uint64_t buffer_size;
};
constexpr uint64_t kMagic = 0x5453455444524c4dull;

// Exports ranges of buffers it was told about (memfds), imports them with mmap; everything else
// goes to the platform's domain. Counts imports, and refuses them when asked to.
class MemfdExportDomain : public hal::MemoryDomain {
 public:
  explicit MemfdExportDomain(bool refuse_imports = false) : refuse_(refuse_imports) {}

  void add_buffer(void* base, int fd, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[reinterpret_cast<uintptr_t>(base)] = Buffer{fd, size};
  }
  int imports() const { return imports_.load(); }

  std::optional<hal::ExportedSegment> export_device_range(const void* address,
                                                          size_t size) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto start = reinterpret_cast<uintptr_t>(address);
    auto it = buffers_.upper_bound(start);
    if (it == buffers_.begin()) return std::nullopt;
    --it;
    if (start - it->first + size > it->second.size) return std::nullopt;
    RangeDescriptor descriptor{kMagic, start - it->first, size, it->second.size};
    hal::ExportedSegment exported;
    exported.descriptor.resize(sizeof(descriptor));
    std::memcpy(exported.descriptor.data(), &descriptor, sizeof(descriptor));
    exported.fd = ::dup(it->second.fd);
    return exported;
  }

  std::unique_ptr<hal::ImportedRange> import_device_range(hal::ExportedSegment exported) override {
    imports_++;
    base::UniqueFd fd(exported.fd);
    if (refuse_) raise(Status::kDevice, "this test's domain refuses imports");
    RangeDescriptor descriptor{};
    if (exported.descriptor.size() != sizeof(descriptor) || !fd.valid()) {
      raise(Status::kInvalidInput, "not a test range");
    }
    std::memcpy(&descriptor, exported.descriptor.data(), sizeof(descriptor));
    if (descriptor.magic != kMagic) raise(Status::kInvalidInput, "not a test range");
    void* base =
        ::mmap(nullptr, descriptor.buffer_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (base == MAP_FAILED) raise_errno("mapping a test range", errno);
    return std::make_unique<Mapped>(base, descriptor);
  }

  // The rest is the platform's.
  size_t granularity(hal::MemoryKind kind) const override { return platform().granularity(kind); }
  std::unique_ptr<hal::Segment> allocate(hal::MemoryKind kind, int device, size_t size) override {
    return platform().allocate(kind, device, size);
  }
  hal::ExportedSegment export_segment(const hal::Segment& segment) override {
    return platform().export_segment(segment);
  }
  std::unique_ptr<hal::Segment> import_segment(hal::ExportedSegment exported) override {
    return platform().import_segment(std::move(exported));
  }
  std::unique_ptr<hal::VaRange> reserve(size_t size, void* fixed_address) override {
    return platform().reserve(size, fixed_address);
  }
  void* map_anywhere(const hal::Segment& segment) override {
    return platform().map_anywhere(segment);
  }
  void unmap_anywhere(void* address, size_t size) override {
    platform().unmap_anywhere(address, size);
  }
  void register_user_memory(void* address, size_t size) override {
    platform().register_user_memory(address, size);
  }
  void unregister_user_memory(void* address) override {
    platform().unregister_user_memory(address);
  }

 private:
  struct Buffer {
    int fd;
    size_t size;
  };
  class Mapped : public hal::ImportedRange {
   public:
    Mapped(void* base, const RangeDescriptor& descriptor) : base_(base), descriptor_(descriptor) {}
    ~Mapped() override { ::munmap(base_, descriptor_.buffer_size); }
    void* address() const override { return static_cast<char*>(base_) + descriptor_.offset; }
    size_t size() const override { return descriptor_.size; }

   private:
    void* base_;
    RangeDescriptor descriptor_;
  };
  static hal::MemoryDomain& platform() { return core::platform().memory_domain(); }

  const bool refuse_;
  std::atomic<int> imports_{0};
  std::mutex mutex_;
  std::map<uintptr_t, Buffer> buffers_;
};

// A shared-memory buffer that stands in for device memory.
class MemfdBuffer {
 public:
  explicit MemfdBuffer(size_t size) : size_(size) {
    fd_ = ::memfd_create("memloom-test-device", MFD_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(size)) != 0) raise_errno("memfd", errno);
    base_ =
        static_cast<uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    if (base_ == MAP_FAILED) raise_errno("mmap", errno);
  }
  ~MemfdBuffer() {
    ::munmap(base_, size_);
    ::close(fd_);
  }
  uint8_t* data() const { return base_; }
  int fd() const { return fd_; }

 private:
  size_t size_;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
};

std::shared_ptr<Engine> make_engine(const std::string& store_url, hal::MemoryDomain& domain) {
  EngineOptions options;
  options.serves = true;
  options.timeout = std::chrono::seconds(5);
  options.device_domain = &domain;
  return Engine::create(store_url, free_unique_id(), options);
}

uint64_t remote(const void* address) {
  return reinterpret_cast<uintptr_t>(address);
}

// Writes `data` to the peer at `at` and reads it back.
void write_and_read_back(Engine& engine, const std::string& peer, uint64_t at,
                         std::vector<uint8_t> data) {
  engine.transfer(Direction::kWrite, peer,
                  {TransferEntry{reinterpret_cast<char*>(data.data()), at, data.size()}});
  std::vector<uint8_t> back(data.size());
  engine.transfer(Direction::kRead, peer,
                  {TransferEntry{reinterpret_cast<char*>(back.data()), at, back.size()}});
  ASSERT_EQ(back, data);
}

// SIGSTOPs a process for the guard's lifetime.
class Stopped {
 public:
  explicit Stopped(pid_t pid) : pid_(pid) { ::kill(pid_, SIGSTOP); }
  ~Stopped() { ::kill(pid_, SIGCONT); }

 private:
  pid_t pid_;
};

void owner_rank(const testing::RankContext& context, uint64_t seed) {
  auto client = store::Client::connect(context.store_url);
  MemfdExportDomain domain;
  MemfdBuffer device(kExported);
  domain.add_buffer(device.data(), device.fd(), kExported);
  std::vector<uint8_t> plain = random_bytes(kPlain, seed + 1);
  auto engine = make_engine(context.store_url, domain);
  engine->register_memory({{device.data(), kExported}, {plain.data(), kPlain}});
  std::ostringstream record;
  record << engine->unique_id() << " " << ::getpid() << " " << remote(device.data()) << " "
         << remote(plain.data());
  publish(*client, "owner", record.str());

  await(*client, "written");
  // What the initiator wrote while this process was stopped is here.
  EXPECT_EQ(std::memcmp(device.data() + kChunk, random_bytes(kChunk, seed + 3).data(), kChunk), 0);
  engine->deregister_memory(device.data());
  engine->register_memory({{device.data(), kExported}});
  publish(*client, "registered again", "");
  await(*client, "done");
  engine->shutdown();
}

void initiator_rank(const testing::RankContext& context, uint64_t seed) {
  auto client = store::Client::connect(context.store_url);
  std::istringstream record(await(*client, "owner"));
  std::string owner_id;
  pid_t owner_pid = 0;
  uint64_t device = 0, plain = 0;
  record >> owner_id >> owner_pid >> device >> plain;
  MemfdExportDomain domain;
  auto engine = make_engine(context.store_url, domain);

  // Exported memory is imported once and then copied with streams: the owner need not run.
  write_and_read_back(*engine, owner_id, device, random_bytes(kChunk, seed + 2));
  EXPECT_EQ(domain.imports(), 1);
  {
    Stopped stopped(owner_pid);
    write_and_read_back(*engine, owner_id, device + kChunk, random_bytes(kChunk, seed + 3));
  }
  EXPECT_EQ(domain.imports(), 1);

  // Memory the owner did not export goes over TCP, as before.
  std::vector<uint8_t> seen(kPlain);
  engine->transfer(Direction::kRead, owner_id,
                   {TransferEntry{reinterpret_cast<char*>(seen.data()), plain, kPlain}});
  EXPECT_EQ(seen, random_bytes(kPlain, seed + 1));
  EXPECT_EQ(domain.imports(), 1);

  // A domain that cannot import falls back to TCP for the same memory.
  MemfdExportDomain refusing(true);
  auto fallback = make_engine(context.store_url, refusing);
  write_and_read_back(*fallback, owner_id, device + 2 * kChunk, random_bytes(kChunk, seed + 4));
  write_and_read_back(*fallback, owner_id, device + 3 * kChunk, random_bytes(kChunk, seed + 5));
  EXPECT_EQ(refusing.imports(), 1) << "a refused import is not tried again for the region";
  fallback->shutdown();

  // A region registered again is a new export: imported anew, the old mapping dropped.
  publish(*client, "written", "");
  await(*client, "registered again");
  write_and_read_back(*engine, owner_id, device, random_bytes(kChunk, seed + 6));
  EXPECT_EQ(domain.imports(), 2);
  publish(*client, "done", "");
  engine->shutdown();
}

TEST(TransDevicePath, SameNodePeersCopyExportedMemoryWithStreamsAndFallBackToTcp) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.timeout = std::chrono::seconds(60);
  options.env["MEMLOOM_TRANS_STAGING"] = "1";
  const uint64_t seed = fresh_seed();
  auto results = testing::run_ranks(options, [&](const testing::RankContext& context) {
    if (context.rank == 0) {
      owner_rank(context, seed);
    } else {
      initiator_rank(context, seed);
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(TransDevicePath, APeerInThisProcessIsCopiedWithoutAnImport) {
  TransEnvironment env;
  use_path(PathMode::kStaged);
  MemfdExportDomain domain;
  MemfdBuffer device(kExported);
  domain.add_buffer(device.data(), device.fd(), kExported);
  auto owner = make_engine(env.store_url(), domain);
  auto initiator = make_engine(env.store_url(), domain);
  use_path(PathMode::kDirect);
  owner->register_memory({{device.data(), kExported}});
  auto data = random_bytes(kChunk, fresh_seed());
  write_and_read_back(*initiator, owner->unique_id(), remote(device.data() + kChunk), data);
  EXPECT_EQ(std::memcmp(device.data() + kChunk, data.data(), kChunk), 0);
  EXPECT_EQ(domain.imports(), 0);
  // Deregistered memory is refused, as on every path.
  owner->deregister_memory(device.data());
  EXPECT_THROW(write_and_read_back(*initiator, owner->unique_id(), remote(device.data()), data),
               Error);
  initiator->shutdown();
  owner->shutdown();
}

TEST(TransDevicePath, TheRegionTableCarriesDeviceExports) {
  smem::trans::RegionTable table;
  smem::trans::RegionShare share{
      smem::trans::RegionKind::kDeviceExport, "token#7", {1, 2, 3, 4, 5}};
  ASSERT_TRUE(table.add(0x10000, 4096, share));
  // The same range again is a no-op, whatever its new export.
  EXPECT_FALSE(table.add(0x10000, 4096, smem::trans::RegionShare{}));
  smem::trans::RegionView view(::fcntl(table.fd(), F_DUPFD_CLOEXEC, 0));
  auto snapshot = view.snapshot();
  const smem::trans::RegionRef* region = snapshot->find(0x10000, 16);
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->kind, smem::trans::RegionKind::kDeviceExport);
  EXPECT_EQ(region->token, "token#7");
  EXPECT_EQ(region->descriptor, share.descriptor);
  smem::trans::RegionShare oversized{smem::trans::RegionKind::kDeviceExport, "",
                                     std::vector<uint8_t>(smem::trans::kMaxDescriptorBytes + 1)};
  EXPECT_THROW(table.add(0x20000, 4096, oversized), Error);
}

}  // namespace
}  // namespace memloom::trans_test
