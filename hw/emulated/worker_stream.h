// The emulated Stream: one worker thread per stream runs the enqueued operations in order, the
// way a CUDA stream runs its work; kernels fan out over the process's pool, and large copies run
// on the worker and the process's copy helper (the emulated copy engine).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "hw/hal/stream.h"
#include "src/base/thread_pool.h"
#include "src/base/two_thread_copier.h"

namespace memloom::emulated {

using base::ThreadPool;  // the pool kernels and stream copies run on

// Completion flag shared by an event and the stream operation that completes it.
class EventState {
 public:
  void complete();
  bool done();
  // False if the deadline passed first.
  bool wait_until(Deadline deadline);
  // Used by stream workers only: the event is completed by another stream's worker, which always
  // gets to it because streams drain before they are destroyed.
  void wait();

 private:
  std::mutex mutex_;
  std::condition_variable completed_;
  bool done_ = false;
};

class WorkerEvent : public hal::Event {
 public:
  explicit WorkerEvent(std::shared_ptr<EventState> state) : state_(std::move(state)) {}
  bool query() override;
  void synchronize(Deadline deadline) override;
  const std::shared_ptr<EventState>& state() const { return state_; }

 private:
  std::shared_ptr<EventState> state_;
};

class WorkerStream : public hal::Stream {
 public:
  // `pool` runs kernels and `copier` copies; both are shared by the process's streams.
  WorkerStream(int device, std::shared_ptr<ThreadPool> pool,
               std::shared_ptr<base::TwoThreadCopier> copier);
  // Drains: every enqueued operation runs before the worker stops.
  ~WorkerStream() override;
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  void submit(hal::StreamWork work) override;
  std::unique_ptr<hal::Event> record() override;
  void wait(hal::Event& event) override;
  void synchronize(Deadline deadline) override;
  void* native_handle() override { return static_cast<hal::Stream*>(this); }

  int device() const { return device_; }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable work_ready;
    std::condition_variable work_done;
    std::deque<std::function<void()>> queue;
    // Changed under `mutex`; atomic so that waiters may poll them without it first.
    std::atomic<uint64_t> enqueued{0};
    std::atomic<uint64_t> completed{0};
    std::exception_ptr first_error;
    bool stopping = false;
    std::thread worker;
  };
  void enqueue(std::function<void()> operation);
  // Checks the launch against the CPU kernel table and enqueues it with a copy of its arguments.
  void enqueue_kernel(const hal::KernelLaunch& launch);
  void work();

  const int device_;
  const std::shared_ptr<ThreadPool> pool_;
  const std::shared_ptr<base::TwoThreadCopier> copier_;
  const pid_t owner_pid_;
  std::unique_ptr<State> state_;  // heap-held for the same fork reason as ThreadPool's
};

}  // namespace memloom::emulated
