// Stream: ordered asynchronous work (copies, kernels, host callbacks) and events.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "hw/hal/kernels.h"
#include "memloom/deadline.h"

namespace memloom::hal {

class Event {
 public:
  virtual ~Event() = default;
  // True once all work enqueued before record() has completed.
  virtual bool query() = 0;
  // Throws kTimeout if the work has not completed by the deadline.
  virtual void synchronize(Deadline deadline) = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;

  // Copies between any two addresses the backend can reach (device, mapped GVA, host, registered).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // Runs a kernel from the shared kernel table (hw/hal/kernels.h) over `work_items` items.
  virtual void launch(const KernelLaunch& launch) = 0;
  // Runs `fn` on a host thread in stream order. An exception thrown by fn is kept and rethrown by
  // the next synchronize(), which is how asynchronous failures reach the caller.
  virtual void host_function(std::function<void()> fn) = 0;

  virtual std::unique_ptr<Event> record() = 0;
  // Later work on this stream waits for `event`.
  virtual void wait(Event& event) = 0;
  // Throws kTimeout on the deadline, or the first error an enqueued operation raised.
  virtual void synchronize(Deadline deadline) = 0;

  // cudaStream_t on the CUDA backend, this object on the emulated one.
  virtual void* native_handle() = 0;
};

}  // namespace memloom::hal
