#include "src/wholememory/ops/op_stream.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

OpStream::OpStream(std::unique_ptr<hal::Stream> stream) : stream_(std::move(stream)) {}

OpStream::~OpStream() {
  release_quietly("a stream's pending work", [&] {
    stream_->synchronize(Deadline::after(core::default_collective_timeout()));
  });
  ring_.reset();  // after the drain: the stream may have been writing its words
}

BadIndexRing& OpStream::bad_index_ring(int device) {
  if (!ring_) ring_ = std::make_unique<BadIndexRing>(device);
  return *ring_;
}

void OpStream::synchronize(Deadline deadline) {
  stream_->synchronize(deadline);
  std::optional<std::string> error;
  {
    std::lock_guard<std::mutex> lock(enqueue_mutex_);
    if (!ring_) return;
    ring_->collect(false);
    error = ring_->take_error();
  }
  if (error) raise(Status::kInvalidInput, *error);
}

StreamRegistry& StreamRegistry::instance() {
  // Never destroyed: streams must not be torn down by static destructors after the backend.
  static auto* registry = new StreamRegistry();
  return *registry;
}

void StreamRegistry::forget_if_forked() {
  if (streams_ != nullptr && owner_pid_ == ::getpid()) return;
  streams_ = new std::map<void*, std::shared_ptr<OpStream>>();  // any inherited map is leaked
  owner_pid_ = ::getpid();
}

void* StreamRegistry::create() {
  auto& platform = core::platform();
  auto entry = std::make_shared<OpStream>(platform.create_stream(platform.current_device()));
  void* handle = entry->stream().native_handle();
  std::lock_guard<std::mutex> lock(mutex_);
  forget_if_forked();
  (*streams_)[handle] = std::move(entry);
  return handle;
}

void StreamRegistry::destroy(void* handle) {
  std::shared_ptr<OpStream> removed;  // destroyed (drained) outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    forget_if_forked();
    auto found = streams_->find(handle);
    if (handle == nullptr || found == streams_->end()) {
      raise(Status::kInvalidInput,
            "stream handle is not a stream made by memloom_stream_create (or was destroyed)");
    }
    removed = std::move(found->second);
    streams_->erase(found);
  }
}

std::shared_ptr<OpStream> StreamRegistry::resolve(void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  forget_if_forked();
  auto found = streams_->find(handle);
  if (found != streams_->end()) return found->second;
  auto& platform = core::platform();
  std::unique_ptr<hal::Stream> stream;
  try {
    stream = platform.adopt_stream(handle);
  } catch (const Error& error) {
    if (error.status() != Status::kNotSupported) throw;
    if (handle != nullptr) {
      raise(Status::kInvalidInput,
            "stream handle is not a stream made by memloom_stream_create "
            "(the " +
                platform.name() + " backend cannot adopt other streams)");
    }
    // This backend has no native default stream: the process gets one of its own.
    stream = platform.create_stream(platform.current_device());
  }
  auto entry = std::make_shared<OpStream>(std::move(stream));
  (*streams_)[handle] = entry;
  return entry;
}

}  // namespace memloom::wholememory
