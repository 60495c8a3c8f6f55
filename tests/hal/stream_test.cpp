// HAL conformance: Stream and Event. Device memory is touched only by copies and kernels.
#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "tests/hal/hal_test_helpers.h"

namespace memloom::hal_test {
namespace {

using hal::MemoryKind;
using std::chrono::milliseconds;

// Blocks a stream inside a host function until the test opens it, so tests can observe pending
// work without guessing how long anything takes. Bounded so that a broken stream cannot hang.
class Gate {
 public:
  void open() { promise_.set_value(); }
  std::function<void()> blocker() {
    return [future = future_] {
      if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        throw std::runtime_error("gate never opened");
      }
    };
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

TEST(Stream, FillKernelCoversOddSizes) {
  auto stream = platform().create_stream(platform().current_device());
  for (size_t bytes : {size_t{1}, size_t{4095}, size_t{(1u << 20) + 3}}) {
    MappedSegment device(MemoryKind::kDevice, bytes);
    const uint64_t seed = 1000 + bytes;
    launch_fill(*stream, device.address, bytes, seed);
    EXPECT_EQ(first_pattern_mismatch(read_back(*stream, device.address, bytes), seed), -1)
        << "size " << bytes;
  }
}

TEST(Stream, FillKernelWritesNothingPastItsItems) {
  auto stream = platform().create_stream(platform().current_device());
  const size_t bytes = 4 * 4096;
  MappedSegment device(MemoryKind::kDevice, bytes);
  HostBuffer zeros(bytes, 0xEE);
  stream->copy(device.address, zeros.data(), bytes);
  launch_fill(*stream, device.address + 5, 4095, 7);  // items 0..4094, starting at byte 5
  auto bytes_back = read_back(*stream, device.address, bytes);
  for (size_t i = 0; i < bytes; ++i) {
    const bool inside = i >= 5 && i < 5 + 4095;
    const uint8_t expected = inside ? kernels::fill_pattern_byte(7, i - 5) : 0xEE;
    ASSERT_EQ(bytes_back[i], expected) << "byte " << i;
  }
}

TEST(Stream, LaunchOfZeroItemsIsAnOrderedNoOp) {
  auto stream = platform().create_stream(platform().current_device());
  MappedSegment device(MemoryKind::kDevice, 4096);
  HostBuffer ones(4096, 1);
  stream->copy(device.address, ones.data(), 4096);
  launch_fill(*stream, device.address, 0, 3);
  auto back = read_back(*stream, device.address, 4096);
  EXPECT_EQ(back, std::vector<uint8_t>(4096, 1));
}

TEST(Stream, BadLaunchesAreRejected) {
  auto stream = platform().create_stream(platform().current_device());
  MappedSegment device(MemoryKind::kDevice, 4096);
  kernels::FillPatternArgs args{device.address, 1};
  EXPECT_STATUS(Status::kInvalidInput,
                stream->launch({hal::KernelId::kFillPattern, &args, sizeof(args) - 1, 16}));
  EXPECT_STATUS(Status::kInvalidInput,
                stream->launch({hal::KernelId::kFillPattern, nullptr, sizeof(args), 16}));
  EXPECT_STATUS(Status::kInvalidInput,
                stream->launch({hal::KernelId::kCount, &args, sizeof(args), 16}));
  EXPECT_STATUS(Status::kInvalidInput,
                stream->launch({static_cast<hal::KernelId>(9999), &args, sizeof(args), 16}));
  EXPECT_STATUS(Status::kInvalidInput, stream->copy(nullptr, device.address, 16));
  EXPECT_STATUS(Status::kInvalidInput, stream->copy(device.address, nullptr, 16));
  EXPECT_STATUS(Status::kSuccess, stream->copy(nullptr, nullptr, 0));
  EXPECT_STATUS(Status::kInvalidInput, stream->host_function(nullptr));
  EXPECT_NO_THROW(stream->synchronize(soon()));
}

TEST(Stream, KernelArgumentsAreCopiedAtEnqueue) {
  auto stream = platform().create_stream(platform().current_device());
  const size_t bytes = 8192;
  MappedSegment device(MemoryKind::kDevice, bytes);
  Gate gate;
  stream->host_function(gate.blocker());
  kernels::FillPatternArgs args{device.address, 11};
  stream->launch({hal::KernelId::kFillPattern, &args, sizeof(args), bytes});
  args.seed = 99;  // too late: the launch already holds its own copy
  args.destination = nullptr;
  gate.open();
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, device.address, bytes), 11), -1);
}

TEST(Stream, CopiesAndKernelsRunInOrder) {
  auto stream = platform().create_stream(platform().current_device());
  const size_t bytes = 3 * 4096 + 17;
  MappedSegment a(MemoryKind::kDevice, bytes), b(MemoryKind::kDevice, bytes),
      c(MemoryKind::kDevice, bytes);
  HostBuffer first(bytes), second(bytes);
  Gate gate;
  stream->host_function(gate.blocker());  // everything below is queued before any of it runs
  launch_fill(*stream, a.address, bytes, 1);
  stream->copy(b.address, a.address, bytes);  // b = pattern 1
  launch_fill(*stream, a.address, bytes, 2);  // overwrites a only after the copy
  stream->copy(c.address, a.address, bytes);  // c = pattern 2
  stream->copy(first.data(), b.address, bytes);
  stream->copy(second.data(), c.address, bytes);
  gate.open();
  stream->synchronize(soon());
  EXPECT_EQ(first_pattern_mismatch({first.data(), first.data() + bytes}, 1), -1);
  EXPECT_EQ(first_pattern_mismatch({second.data(), second.data() + bytes}, 2), -1);
}

TEST(Stream, LargeCopiesArriveWhole) {
  auto stream = platform().create_stream(platform().current_device());
  const size_t bytes = (24u << 20) + 4096;  // past any size at which a backend splits copies
  MappedSegment device(MemoryKind::kDevice, bytes);
  launch_fill(*stream, device.address, bytes, 5);
  EXPECT_EQ(first_pattern_mismatch(read_back(*stream, device.address, bytes), 5), -1);
}

TEST(Stream, HostFunctionsRunInOrderWithCopies) {
  auto stream = platform().create_stream(platform().current_device());
  HostBuffer source(64, 0x5A), target(64, 0);
  std::vector<uint8_t> seen_before, seen_after;
  stream->host_function([&] { seen_before.assign(target.data(), target.data() + 64); });
  stream->copy(target.data(), source.data(), 64);
  stream->host_function([&] { seen_after.assign(target.data(), target.data() + 64); });
  stream->synchronize(soon());
  EXPECT_EQ(seen_before, std::vector<uint8_t>(64, 0));
  EXPECT_EQ(seen_after, std::vector<uint8_t>(64, 0x5A));
}

TEST(Stream, EventsOrderWorkAcrossStreams) {
  const int device = platform().current_device();
  auto producer = platform().create_stream(device);
  auto consumer = platform().create_stream(device);
  const size_t bytes = 64 * 1024 + 1;
  MappedSegment data(MemoryKind::kDevice, bytes);
  HostBuffer result(bytes);
  Gate gate;
  producer->host_function(gate.blocker());
  launch_fill(*producer, data.address, bytes, 77);
  auto produced = producer->record();
  consumer->wait(*produced);
  consumer->copy(result.data(), data.address, bytes);
  auto consumed = consumer->record();

  EXPECT_FALSE(produced->query());
  EXPECT_FALSE(consumed->query());
  EXPECT_STATUS(Status::kTimeout, consumer->synchronize(Deadline::after(milliseconds(50))));
  gate.open();
  consumed->synchronize(soon());
  EXPECT_TRUE(produced->query());
  EXPECT_TRUE(consumed->query());
  EXPECT_EQ(first_pattern_mismatch({result.data(), result.data() + bytes}, 77), -1);
}

TEST(Stream, WaitOnACompletedEventDoesNotBlock) {
  auto a = platform().create_stream(platform().current_device());
  auto b = platform().create_stream(platform().current_device());
  auto event = a->record();
  event->synchronize(soon());
  EXPECT_TRUE(event->query());
  std::atomic<bool> ran{false};
  b->wait(*event);
  b->host_function([&] { ran = true; });
  b->synchronize(soon());
  EXPECT_TRUE(ran);
}

TEST(Stream, HostFunctionErrorSurfacesAtSynchronizeOnce) {
  auto stream = platform().create_stream(platform().current_device());
  std::atomic<int> later_ran{0};
  stream->host_function([] { raise(Status::kInvalidValue, "first failure"); });
  stream->host_function([] { throw std::runtime_error("second failure"); });
  stream->host_function([&] { ++later_ran; });
  try {
    stream->synchronize(soon());
    ADD_FAILURE() << "synchronize did not report the host function's error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidValue);
    EXPECT_STREQ(error.what(), "first failure");
  }
  EXPECT_EQ(later_ran, 1);                       // work after a failure still runs, in order
  EXPECT_NO_THROW(stream->synchronize(soon()));  // the error was reported and cleared
}

TEST(Stream, NonMemloomExceptionsSurfaceToo) {
  auto stream = platform().create_stream(platform().current_device());
  stream->host_function([] { throw std::runtime_error("plain failure"); });
  EXPECT_THROW(stream->synchronize(soon()), std::runtime_error);
  EXPECT_NO_THROW(stream->synchronize(soon()));
}

TEST(Stream, SynchronizeTimesOutAtTheDeadline) {
  auto stream = platform().create_stream(platform().current_device());
  Gate gate;
  stream->host_function(gate.blocker());
  auto event = stream->record();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_STATUS(Status::kTimeout, stream->synchronize(Deadline::after(milliseconds(100))));
  EXPECT_STATUS(Status::kTimeout, event->synchronize(Deadline::after(milliseconds(100))));
  EXPECT_STATUS(Status::kTimeout, stream->synchronize(Deadline::now()));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(190));
  EXPECT_LT(waited, std::chrono::seconds(10));
  EXPECT_FALSE(event->query());
  gate.open();
  EXPECT_NO_THROW(stream->synchronize(soon()));
  EXPECT_TRUE(event->query());
}

TEST(Stream, DestroyingAStreamDrainsIt) {
  std::atomic<int> done{0};
  {
    auto stream = platform().create_stream(platform().current_device());
    for (int i = 0; i < 3; ++i) {
      stream->host_function([&] {
        std::this_thread::sleep_for(milliseconds(20));
        ++done;
      });
    }
  }
  EXPECT_EQ(done, 3);
}

TEST(Stream, ManyStreamsShareTheKernelThreads) {
  const int device = platform().current_device();
  const size_t bytes = 256 * 1024 + 9;
  std::vector<std::unique_ptr<hal::Stream>> streams;
  std::vector<std::unique_ptr<MappedSegment>> buffers;
  for (int i = 0; i < 6; ++i) {
    streams.push_back(platform().create_stream(device));
    buffers.push_back(std::make_unique<MappedSegment>(MemoryKind::kDevice, bytes));
    launch_fill(*streams.back(), buffers.back()->address, bytes, 300 + i);
  }
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(first_pattern_mismatch(read_back(*streams[i], buffers[i]->address, bytes), 300 + i),
              -1)
        << "stream " << i;
  }
}

TEST(Stream, HasANativeHandle) {
  auto stream = platform().create_stream(platform().current_device());
  EXPECT_NE(stream->native_handle(), nullptr);
}

}  // namespace
}  // namespace memloom::hal_test
