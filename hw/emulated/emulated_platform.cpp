// The emulated Platform: the root that opens the memfd memory domain, worker-thread streams, the
// host layer's shared-memory/ZeroMQ collectives and the UCX transport.
#include "hw/emulated/emulated_platform.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "hw/emulated/adopted_stream.h"
#include "hw/emulated/memfd_memory_domain.h"
#include "hw/emulated/worker_stream.h"
#include "hw/host/collectives_factory.h"
#include "hw/host/device_choice.h"
#include "hw/host/transport_support.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/log.h"
#include "src/base/thread_pool.h"
#include "src/base/two_thread_copier.h"

namespace memloom::emulated {
namespace {

constexpr int kMaxDevices = 1024;

const char* env_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int env_int(const char* name, int fallback, int low, int high) {
  const char* value = env_value(name);
  if (value == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || parsed < low || parsed > high) {
    raise(Status::kInvalidValue, std::string(name) + "='" + value + "': expected an integer in [" +
                                     std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return static_cast<int>(parsed);
}

size_t env_bytes(const char* name, size_t fallback) {
  const char* value = env_value(name);
  if (value == nullptr) return fallback;
  try {
    return base::parse_byte_size(value);
  } catch (const Error& error) {
    raise(Status::kInvalidValue, std::string(name) + ": " + error.what());
  }
}

void check_options(const EmulatedOptions& options) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t g = options.granularity;
  if (g < page || (g & (g - 1)) != 0) {
    raise(Status::kInvalidValue, "emulated granularity " + std::to_string(g) +
                                     " must be a power of two of at least the page size (" +
                                     std::to_string(page) + ")");
  }
  if (options.devices < 1 || options.devices > kMaxDevices) {
    raise(Status::kInvalidValue, "emulated device count " + std::to_string(options.devices) +
                                     " is outside [1, " + std::to_string(kMaxDevices) + "]");
  }
  if (options.device_capacity == 0) raise(Status::kInvalidValue, "emulated device capacity is 0");
  if (options.cpu_threads < 0) {
    raise(Status::kInvalidValue, "cpu_threads " + std::to_string(options.cpu_threads) + " < 0");
  }
}

class EmulatedPlatform : public hal::Platform {
 public:
  explicit EmulatedPlatform(const EmulatedOptions& options)
      : options_(options),
        domain_(options.devices, options.device_capacity, options.granularity),
        current_device_(initial_device(options.devices)) {}

  std::string name() const override { return "emulated"; }
  int device_count() const override { return options_.devices; }

  size_t device_capacity(int device) const override {
    check_device(device, "device_capacity");
    return options_.device_capacity;
  }

  void set_current_device(int device) override {
    check_device(device, "set_current_device");
    current_device_.store(device);
  }
  int current_device() const override { return current_device_.load(); }

  hal::MemoryDomain& memory_domain() override { return domain_; }

  std::unique_ptr<hal::Stream> create_stream(int device) override {
    check_device(device, "create_stream");
    StreamThreads threads = stream_threads();
    return std::make_unique<WorkerStream>(device, std::move(threads.pool),
                                          std::move(threads.copier));
  }

  std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                       hal::Bootstrap& bootstrap,
                                                       Deadline deadline) override {
    return host::create_collectives(group, bootstrap, deadline);
  }

  using hal::Platform::create_transport;
  std::unique_ptr<hal::Transport> create_transport(const hal::TransportOptions& options) override {
    return emulated::create_transport(options);
  }
  hal::TransportSupport transport_support() override { return host::transport_support(); }

  // Its own streams only: their native handle is the stream object (see adopted_stream.h).
  std::unique_ptr<hal::Stream> adopt_stream(void* native_handle) override {
    return adopt_live_stream(native_handle);
  }

  // Kernels run on CPU threads that each take whole rows.
  hal::Capabilities capabilities() const override { return hal::Capabilities{}; }

 private:
  // MEMLOOM_DEVICE, else the local rank spread over the node's devices, else device 0: an
  // emulated device is never chosen by a thread (host/device_choice.h).
  static int initial_device(int devices) {
    const auto choice = host::choose_device(base::Environment::read(), devices, -1,
                                            "emulated devices (MEMLOOM_EMU_DEVICES)");
    MEMLOOM_LOG(kDebug, "emulated backend: working on device " << choice.device << ", chosen by "
                                                               << choice.reason);
    return choice.device;
  }

  void check_device(int device, const char* operation) const {
    if (device < 0 || device >= options_.devices) {
      raise(Status::kInvalidInput, std::string(operation) + ": device " + std::to_string(device) +
                                       " does not exist (" + std::to_string(options_.devices) +
                                       " emulated devices)");
    }
  }

  struct StreamThreads {
    std::shared_ptr<ThreadPool> pool;
    std::shared_ptr<base::TwoThreadCopier> copier;
  };

  // The kernel pool and the copier every stream shares, created on first use (the copier starts
  // its helper thread at its first large copy). A child forked after they started inherits
  // objects whose threads stayed in the parent, so it gets its own.
  StreamThreads stream_threads() {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    if (threads_.pool && threads_pid_ != ::getpid()) {
      new StreamThreads(std::move(threads_));  // leaked on purpose: see ~ThreadPool
      threads_ = StreamThreads{};
    }
    if (!threads_.pool) {
      const int hardware = static_cast<int>(std::thread::hardware_concurrency());
      const int threads = options_.cpu_threads > 0 ? options_.cpu_threads : std::max(hardware, 1);
      threads_.pool = std::make_shared<ThreadPool>(threads);
      threads_.copier = std::make_shared<base::TwoThreadCopier>();
      threads_pid_ = ::getpid();
      MEMLOOM_LOG(kDebug, "emulated backend: " << threads << " kernel threads");
    }
    return threads_;
  }

  const EmulatedOptions options_;
  MemfdMemoryDomain domain_;
  std::atomic<int> current_device_;
  std::mutex threads_mutex_;
  StreamThreads threads_;
  pid_t threads_pid_ = 0;
};

}  // namespace

EmulatedOptions EmulatedOptions::from_environment() {
  EmulatedOptions options;
  options.devices = env_int("MEMLOOM_EMU_DEVICES", options.devices, 1, kMaxDevices);
  options.device_capacity = env_bytes("MEMLOOM_EMU_DEVICE_MEM", options.device_capacity);
  options.cpu_threads = env_int("MEMLOOM_EMU_CPU_THREADS", options.cpu_threads, 0, 4096);
  options.granularity = env_bytes("MEMLOOM_EMU_GRANULARITY", options.granularity);
  options.start_delay_ms = env_int("MEMLOOM_EMU_START_DELAY_MS", options.start_delay_ms, 0, 600000);
  check_options(options);
  return options;
}

std::unique_ptr<hal::Platform> create_platform(const EmulatedOptions& options) {
  check_options(options);
  if (options.start_delay_ms > 0) {
    MEMLOOM_LOG(kDebug, "emulated backend: starting " << options.start_delay_ms
                                                      << " ms late (MEMLOOM_EMU_START_DELAY_MS)");
    std::this_thread::sleep_for(std::chrono::milliseconds(options.start_delay_ms));
  }
  return std::make_unique<EmulatedPlatform>(options);
}

std::unique_ptr<hal::Transport> create_transport(const hal::TransportOptions& options) {
  return std::make_unique<host::UcxTransport>(options);
}

}  // namespace memloom::emulated

// The backend's entry point, the same symbol the CUDA module exports: the core opens every
// backend through it and sees nothing but the HAL.
extern "C" __attribute__((visibility("default"))) memloom::hal::Platform*
memloom_create_platform() {
  using memloom::emulated::EmulatedOptions;
  return memloom::emulated::create_platform(EmulatedOptions::from_environment()).release();
}
