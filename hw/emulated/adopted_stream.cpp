#include "hw/emulated/adopted_stream.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_set>

#include "memloom/error.h"

namespace memloom::emulated {
namespace {

std::mutex g_mutex;
// Leaked on purpose: streams may be destroyed by static destructors after this set would be.
auto& g_live = *new std::unordered_set<void*>();

class AdoptedStream : public hal::Stream {
 public:
  explicit AdoptedStream(hal::Stream& stream) : stream_(stream) {}

  void submit(hal::StreamWork work) override { stream_.submit(std::move(work)); }
  std::unique_ptr<hal::Event> record() override { return stream_.record(); }
  void wait(hal::Event& event) override { stream_.wait(event); }
  void synchronize(Deadline deadline) override { stream_.synchronize(deadline); }
  void* native_handle() override { return stream_.native_handle(); }

 private:
  hal::Stream& stream_;
};

}  // namespace

void register_live_stream(void* native_handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_live.insert(native_handle);
}

void forget_live_stream(void* native_handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_live.erase(native_handle);
}

std::unique_ptr<hal::Stream> adopt_live_stream(void* native_handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // A null handle (the default stream: every gather or scatter without one asks here first) is
  // the common case and needs no formatting; other addresses are printed without iostreams.
  if (native_handle == nullptr) {
    raise(Status::kNotSupported, "emulated backend: there is no native default stream to adopt");
  }
  if (g_live.count(native_handle) == 0) {
    char address[2 + 2 * sizeof(uintptr_t) + 1];
    std::snprintf(address, sizeof address, "0x%" PRIxPTR,
                  reinterpret_cast<uintptr_t>(native_handle));
    raise(Status::kNotSupported,
          std::string("emulated backend: ") + address +
              " is not a live stream of this process (only its own streams can be adopted)");
  }
  return std::make_unique<AdoptedStream>(*static_cast<hal::Stream*>(native_handle));
}

}  // namespace memloom::emulated
