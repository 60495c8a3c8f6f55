// Stream: ordered asynchronous work (copies, kernels, host callbacks) and events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "hw/hal/kernels.h"
#include "memloom/deadline.h"
#include "memloom/error.h"

namespace memloom::hal {

class Event {
 public:
  virtual ~Event() = default;
  // True once all work enqueued before record() has completed.
  virtual bool query() = 0;
  // Throws kTimeout if the work has not completed by the deadline.
  virtual void synchronize(Deadline deadline) = 0;
};

enum class StreamWorkKind : uint32_t { kCopy, kKernel, kHostFunction };

// One piece of ordered work, as the public methods of Stream pack it. Backends implement a single
// submit() over it (as Collectives funnel every operation through run()), so the argument checks
// every backend needs alike are written once, here, and each backend writes only how it runs
// each kind.
struct StreamWork {
  StreamWorkKind kind = StreamWorkKind::kCopy;
  void* dst = nullptr;        // kCopy
  const void* src = nullptr;  // kCopy
  size_t bytes = 0;           // kCopy: more than zero
  KernelLaunch kernel{};      // kKernel: args non-null (the backend checks args_size)
  std::function<void()> fn;   // kHostFunction: non-empty
};

class Stream {
 public:
  virtual ~Stream() = default;

  // Copies between any two addresses the backend can reach (device, mapped GVA, host, registered).
  void copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    MEMLOOM_CHECK_ARG(dst != nullptr && src != nullptr, "stream copy with a null pointer");
    StreamWork work;
    work.dst = dst;
    work.src = src;
    work.bytes = bytes;
    submit(std::move(work));
  }
  // Runs a kernel from the shared kernel table (hw/hal/kernels.h) over `work_items` items. The
  // caller may reuse its argument struct as soon as launch() returns, as with CUDA.
  void launch(const KernelLaunch& launch) {
    MEMLOOM_CHECK_ARG(launch.args != nullptr, "kernel launched with null arguments");
    StreamWork work;
    work.kind = StreamWorkKind::kKernel;
    work.kernel = launch;
    submit(std::move(work));
  }
  // Runs `fn` on a host thread in stream order. An exception thrown by fn is kept and rethrown by
  // the next synchronize(), which is how asynchronous failures reach the caller.
  void host_function(std::function<void()> fn) {
    MEMLOOM_CHECK_ARG(static_cast<bool>(fn), "host_function with an empty function");
    StreamWork work;
    work.kind = StreamWorkKind::kHostFunction;
    work.fn = std::move(fn);
    submit(std::move(work));
  }

  // Enqueues one checked piece of work; what each kind means is said at its method above.
  virtual void submit(StreamWork work) = 0;
  virtual std::unique_ptr<Event> record() = 0;
  // Later work on this stream waits for `event`.
  virtual void wait(Event& event) = 0;
  // Throws kTimeout on the deadline, or the first error an enqueued operation raised.
  virtual void synchronize(Deadline deadline) = 0;

  // cudaStream_t on the CUDA backend, this object on the emulated one.
  virtual void* native_handle() = 0;
};

}  // namespace memloom::hal
