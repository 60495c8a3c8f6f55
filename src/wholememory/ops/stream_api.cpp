// The public stream API (memloom/stream.h): a thin C layer over the stream registry.
#include "memloom/stream.h"

#include <mutex>
#include <string>

#include "src/base/api_guard.h"
#include "src/core/group.h"
#include "src/wholememory/ops/op_stream.h"

using memloom::Status;
using memloom::wholememory::StreamRegistry;

namespace {

static_assert(MEMLOOM_STATUS_SUCCESS == static_cast<int>(Status::kSuccess));
static_assert(MEMLOOM_STATUS_INVALID_INPUT == static_cast<int>(Status::kInvalidInput));
static_assert(MEMLOOM_STATUS_INVALID_VALUE == static_cast<int>(Status::kInvalidValue));
static_assert(MEMLOOM_STATUS_OUT_OF_MEMORY == static_cast<int>(Status::kOutOfMemory));
static_assert(MEMLOOM_STATUS_COMMUNICATION == static_cast<int>(Status::kCommunication));
static_assert(MEMLOOM_STATUS_TIMEOUT == static_cast<int>(Status::kTimeout));
static_assert(MEMLOOM_STATUS_NOT_FOUND == static_cast<int>(Status::kNotFound));
static_assert(MEMLOOM_STATUS_NOT_IMPLEMENTED == static_cast<int>(Status::kNotImplemented));
static_assert(MEMLOOM_STATUS_NOT_SUPPORTED == static_cast<int>(Status::kNotSupported));
static_assert(MEMLOOM_STATUS_SYSTEM == static_cast<int>(Status::kSystem));
static_assert(MEMLOOM_STATUS_LOGIC == static_cast<int>(Status::kLogic));
static_assert(MEMLOOM_STATUS_DEVICE == static_cast<int>(Status::kDevice));
static_assert(MEMLOOM_STATUS_INTERRUPTED == static_cast<int>(Status::kInterrupted));

memloom_status_t to_stream_status(Status status) {
  return static_cast<memloom_status_t>(status);
}

template <typename Body>
memloom_status_t guarded(const char* function, Body&& body) {
  return memloom::base::guarded<memloom_status_t>(function, to_stream_status,
                                                  std::forward<Body>(body));
}

}  // namespace

extern "C" {

memloom_status_t memloom_stream_create(memloom_stream_t* stream) {
  return guarded("memloom_stream_create", [&] {
    MEMLOOM_CHECK_ARG(stream != nullptr, "stream is null");
    *stream = StreamRegistry::instance().create();
  });
}

memloom_status_t memloom_stream_destroy(memloom_stream_t stream) {
  return guarded("memloom_stream_destroy", [&] { StreamRegistry::instance().destroy(stream); });
}

memloom_status_t memloom_stream_synchronize(memloom_stream_t stream) {
  return guarded("memloom_stream_synchronize", [&] {
    auto entry = StreamRegistry::instance().resolve(stream);
    entry->synchronize(memloom::Deadline::after(memloom::core::default_collective_timeout()));
  });
}

memloom_status_t memloom_memcpy_async(void* dst, const void* src, size_t bytes,
                                      memloom_stream_t stream) {
  return guarded("memloom_memcpy_async", [&] {
    if (bytes == 0) return;
    MEMLOOM_CHECK_ARG(dst != nullptr, "dst is null (copy of " + std::to_string(bytes) + " bytes)");
    MEMLOOM_CHECK_ARG(src != nullptr, "src is null (copy of " + std::to_string(bytes) + " bytes)");
    auto entry = StreamRegistry::instance().resolve(stream);
    // Not inside another thread's operation sequence on the same stream.
    std::lock_guard<std::mutex> lock(entry->enqueue_mutex());
    entry->stream().copy(dst, src, bytes);
  });
}

}  // extern "C"
