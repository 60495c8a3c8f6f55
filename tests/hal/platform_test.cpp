// HAL conformance: Platform. The tests at the end (suite EmulatedPlatform) are EMULATED-ONLY:
// they check how the emulated backend reads its options, and include its header for that.
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "hw/emulated/emulated_platform.h"  // EmulatedPlatform suite only
#include "tests/hal/hal_test_helpers.h"
#include "tests/support/multi_process.h"

namespace memloom::hal_test {
namespace {

using hal::MemoryKind;

TEST(Platform, DescribesItsDevices) {
  const std::string name = platform().name();
  EXPECT_TRUE(name == "emulated" || name == "cuda") << name;
  ASSERT_GE(platform().device_count(), 1);
  for (int d = 0; d < platform().device_count(); ++d) EXPECT_GT(platform().device_capacity(d), 0u);
  EXPECT_GE(platform().current_device(), 0);
  EXPECT_LT(platform().current_device(), platform().device_count());
}

TEST(Platform, RejectsDevicesOutOfRange) {
  const int count = platform().device_count();
  for (int bad : {-1, count, count + 100}) {
    EXPECT_STATUS(Status::kInvalidInput, platform().device_capacity(bad)) << bad;
    EXPECT_STATUS(Status::kInvalidInput, platform().set_current_device(bad)) << bad;
    EXPECT_STATUS(Status::kInvalidInput, platform().create_stream(bad)) << bad;
  }
}

TEST(Platform, CurrentDeviceCanBeChanged) {
  const int original = platform().current_device();
  const int last = platform().device_count() - 1;
  platform().set_current_device(last);
  EXPECT_EQ(platform().current_device(), last);
  platform().set_current_device(original);
  EXPECT_EQ(platform().current_device(), original);
}

TEST(Platform, EveryDeviceRunsKernels) {
  const size_t bytes = 4096 + 1;
  for (int d = 0; d < platform().device_count(); ++d) {
    auto stream = platform().create_stream(d);
    MappedSegment memory(MemoryKind::kDevice, bytes, d);
    launch_fill(*stream, memory.address, bytes, 500 + d);
    EXPECT_EQ(first_pattern_mismatch(read_back(*stream, memory.address, bytes), 500 + d), -1)
        << "device " << d;
  }
}

// `body` in `ranks` forked ranks without a store: each opens a platform of its own, configured by
// the environment it sets.
void in_forked_ranks(int ranks, const std::function<void(const testing::RankContext&)>& body) {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.start_store = false;
  auto results = testing::run_ranks(options, body);
  EXPECT_ALL_RANKS_PASS(results);
}

// Forked ranks see MEMLOOM_LOCAL_RANK; without MEMLOOM_DEVICE each starts on local_rank % count.
TEST(Platform, DefaultDeviceFollowsTheLocalRank) {
  in_forked_ranks(3, [](const testing::RankContext& context) {
    ::unsetenv("MEMLOOM_DEVICE");
    fresh_platform();
    EXPECT_EQ(platform().current_device(), context.local_rank % platform().device_count());
  });
}

TEST(Platform, MemloomDeviceSelectsTheDevice) {
  in_forked_ranks(1, [](const testing::RankContext&) {
    ::unsetenv("MEMLOOM_DEVICE");
    const int count = fresh_platform().device_count();
    if (count < 2) return;
    ::setenv("MEMLOOM_DEVICE", std::to_string(count - 1).c_str(), 1);
    EXPECT_EQ(fresh_platform().current_device(), count - 1);  // read when the platform opens
  });
}

// A backend that is there but misconfigured fails the process. Left to the default choice, the
// CUDA backend once fell back to the emulated one instead (8 devices, so MEMLOOM_DEVICE=1 on a
// 1-GPU host passed there), and that rank could not talk to its CUDA peers.
TEST(Platform, AMisconfiguredDeviceFailsInsteadOfChangingTheBackend) {
  in_forked_ranks(1, [](const testing::RankContext&) {
    ::unsetenv("MEMLOOM_DEVICE");
    const char* backend = std::getenv("MEMLOOM_BACKEND");
    // A run on cuda takes the default choice here, which picks cuda too where it can run.
    if (backend != nullptr && std::string(backend) == "cuda") ::unsetenv("MEMLOOM_BACKEND");
    const int count = fresh_platform().device_count();
    const std::string chosen = platform().name();
    ::setenv("MEMLOOM_DEVICE", std::to_string(count).c_str(), 1);
    EXPECT_STATUS(Status::kInvalidValue, fresh_platform())
        << chosen << " backend with MEMLOOM_DEVICE=" << count;
  });
}

// ---------------------------------------------------------------------------------------------
// EMULATED-ONLY: option parsing of the emulated backend.

using EnvValues = std::map<std::string, std::optional<std::string>>;

// Sets (or with nullopt, unsets) environment variables for one scope.
class ScopedEnv {
 public:
  explicit ScopedEnv(const EnvValues& values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

const EnvValues kNoEmulatorEnv = {{"MEMLOOM_EMU_DEVICES", std::nullopt},
                                  {"MEMLOOM_EMU_DEVICE_MEM", std::nullopt},
                                  {"MEMLOOM_EMU_CPU_THREADS", std::nullopt},
                                  {"MEMLOOM_EMU_GRANULARITY", std::nullopt}};

Status options_status(const std::string& name, const std::string& value) {
  auto env = kNoEmulatorEnv;
  env[name] = value;
  ScopedEnv scoped(env);
  return status_of([] { emulated::EmulatedOptions::from_environment(); });
}

TEST(EmulatedPlatform, OptionDefaults) {
  ScopedEnv scoped(kNoEmulatorEnv);
  const auto options = emulated::EmulatedOptions::from_environment();
  EXPECT_EQ(options.devices, 8);
  EXPECT_EQ(options.device_capacity, 16ull << 30);
  EXPECT_EQ(options.cpu_threads, 0);
  EXPECT_EQ(options.granularity, 4096u);
}

TEST(EmulatedPlatform, OptionsFromEnvironment) {
  ScopedEnv scoped(EnvValues{{"MEMLOOM_EMU_DEVICES", "3"},
                             {"MEMLOOM_EMU_DEVICE_MEM", "64M"},
                             {"MEMLOOM_EMU_CPU_THREADS", "2"},
                             {"MEMLOOM_EMU_GRANULARITY", "2M"}});
  const auto options = emulated::EmulatedOptions::from_environment();
  EXPECT_EQ(options.devices, 3);
  EXPECT_EQ(options.device_capacity, 64u << 20);
  EXPECT_EQ(options.cpu_threads, 2);
  EXPECT_EQ(options.granularity, 2u << 20);
}

TEST(EmulatedPlatform, BadOptionsAreInvalidValues) {
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICES", "abc"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICES", "0"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICES", "-2"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICES", "4x"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICE_MEM", "12Q"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_DEVICE_MEM", "0"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_CPU_THREADS", "many"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_GRANULARITY", "3000"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_GRANULARITY", "12K"), Status::kInvalidValue);
  EXPECT_EQ(options_status("MEMLOOM_EMU_GRANULARITY", "1K"), Status::kInvalidValue);
}

TEST(EmulatedPlatform, HonoursItsOptions) {
  ScopedEnv scoped(EnvValues{{"MEMLOOM_DEVICE", std::nullopt}, {"MEMLOOM_LOCAL_RANK", "4"}});
  emulated::EmulatedOptions options;
  options.devices = 3;
  options.device_capacity = 8u << 20;
  options.cpu_threads = 2;
  options.granularity = 2u << 20;
  auto own = emulated::create_platform(options);
  EXPECT_EQ(own->name(), "emulated");
  EXPECT_EQ(own->device_count(), 3);
  EXPECT_EQ(own->device_capacity(2), 8u << 20);
  EXPECT_EQ(own->current_device(), 1);  // local rank 4 on 3 devices
  auto& memory = own->memory_domain();
  EXPECT_EQ(memory.granularity(MemoryKind::kDevice), 2u << 20);
  EXPECT_STATUS(Status::kInvalidInput, memory.allocate(MemoryKind::kDevice, 0, 1u << 20));
  auto a = memory.allocate(MemoryKind::kDevice, 2, 4u << 20);
  auto b = memory.allocate(MemoryKind::kDevice, 2, 4u << 20);
  try {
    memory.allocate(MemoryKind::kDevice, 2, 2u << 20);
    ADD_FAILURE() << "allocation past the capacity succeeded";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kOutOfMemory);
    const std::string message = error.what();
    EXPECT_NE(message.find("device 2"), std::string::npos) << message;
    EXPECT_NE(message.find("requested 2.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("0 B left"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(memory.allocate(MemoryKind::kDevice, 1, 8u << 20));  // devices are separate
  // Host memory is not limited by the device capacity.
  EXPECT_NO_THROW(memory.allocate(MemoryKind::kHost, -1, 16u << 20));

  emulated::EmulatedOptions bad = options;
  bad.granularity = 3 << 10;
  EXPECT_STATUS(Status::kInvalidValue, emulated::create_platform(bad));
  bad = options;
  bad.devices = 0;
  EXPECT_STATUS(Status::kInvalidValue, emulated::create_platform(bad));
}

TEST(EmulatedPlatform, MemloomDeviceOutOfRangeIsReported) {
  ScopedEnv scoped(EnvValues{{"MEMLOOM_DEVICE", "5"}});
  emulated::EmulatedOptions options;
  options.devices = 2;
  EXPECT_STATUS(Status::kInvalidValue, emulated::create_platform(options));
}

}  // namespace
}  // namespace memloom::hal_test
