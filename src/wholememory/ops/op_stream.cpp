#include "src/wholememory/ops/op_stream.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "memloom/error.h"
#include "src/core/group.h"
#include "src/core/log.h"
#include "src/core/platform_loader.h"
#include "src/core/shared_segments.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

BadIndexSlot::BadIndexSlot(int device) {
  auto& domain = core::platform().memory_domain();
  segment_ = domain.allocate(hal::MemoryKind::kDevice, device,
                             domain.granularity(hal::MemoryKind::kDevice));
  device_word_ = static_cast<unsigned long long*>(domain.map_anywhere(*segment_));
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  host_bytes_ = page;
  host_page_ = static_cast<unsigned long long*>(std::aligned_alloc(page, page));
  if (host_page_ == nullptr) {
    domain.unmap_anywhere(device_word_, segment_->size());
    raise(Status::kOutOfMemory, "cannot allocate the bad-index readback page");
  }
  host_page_[0] = 0;
  host_page_[1] = 0;
  try {
    // Registered so that copies into it stay asynchronous on the CUDA backend.
    domain.register_user_memory(host_page_, host_bytes_);
  } catch (...) {
    std::free(host_page_);
    domain.unmap_anywhere(device_word_, segment_->size());
    throw;
  }
}

BadIndexSlot::~BadIndexSlot() {
  auto& domain = core::platform().memory_domain();
  release_quietly("the bad-index readback page",
                  [&] { domain.unregister_user_memory(host_page_); });
  std::free(host_page_);
  release_quietly("the bad-index device word",
                  [&] { domain.unmap_anywhere(device_word_, segment_->size()); });
}

OpStream::OpStream(std::unique_ptr<hal::Stream> stream) : stream_(std::move(stream)) {}

OpStream::~OpStream() {
  release_quietly("a stream's pending work", [&] {
    stream_->synchronize(Deadline::after(core::default_collective_timeout()));
  });
}

BadIndexSlot& OpStream::bad_index_slot(int device) {
  // Callers hold enqueue_mutex(), which also guards the lazy creation.
  if (!slot_) slot_ = std::make_unique<BadIndexSlot>(device);
  return *slot_;
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
