#include "hw/emulated/worker_stream.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "hw/emulated/adopted_stream.h"
#include "hw/emulated/cpu_kernel_runner.h"
#include "hw/host/wait_policy.h"
#include "memloom/error.h"

namespace memloom::emulated {
namespace {

// A stream operation of a few microseconds used to cost a caller ~55 us from enqueue to the end
// of synchronize on the development VMs: two sleeping threads woken through futexes. Where the
// process may run on two CPUs or more, the worker polls for new work and a synchronizing caller
// polls for completion for a short while first (yielding, so that a thread waiting for the CPU
// gets it), and only then sleeps.
constexpr auto kCallerPoll = std::chrono::microseconds(50);
constexpr auto kWorkerPoll = std::chrono::microseconds(20);

bool may_poll() {
  static const bool several_cpus = host::available_cores() >= 2;
  return several_cpus;
}

// Polls `ready` for at most `budget` (never past `deadline`); true once it holds.
template <typename Ready>
bool poll_briefly(Ready&& ready, std::chrono::microseconds budget, Deadline deadline) {
  if (!may_poll()) return ready();
  const auto until = std::min(std::chrono::steady_clock::now() + budget, deadline.time_point());
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

void EventState::complete() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  completed_.notify_all();
}

bool EventState::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool EventState::wait_until(Deadline deadline) {
  if (poll_briefly([this] { return done(); }, kCallerPoll, deadline)) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  return completed_.wait_until(lock, deadline.time_point(), [this] { return done_; });
}

void EventState::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [this] { return done_; });
}

bool WorkerEvent::query() {
  return state_->done();
}

void WorkerEvent::synchronize(Deadline deadline) {
  if (!state_->wait_until(deadline)) {
    raise(Status::kTimeout, "the work before this event did not complete within the deadline");
  }
}

WorkerStream::WorkerStream(int device, std::shared_ptr<ThreadPool> pool,
                           std::shared_ptr<base::TwoThreadCopier> copier)
    : device_(device),
      pool_(std::move(pool)),
      copier_(std::move(copier)),
      owner_pid_(::getpid()),
      state_(std::make_unique<State>()) {
  state_->worker = std::thread([this] { work(); });
  register_live_stream(native_handle());
}

WorkerStream::~WorkerStream() {
  forget_live_stream(native_handle());
  if (::getpid() != owner_pid_) {
    (void)state_.release();  // inherited through fork: the worker lives only in the parent
    return;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->work_ready.notify_all();
  state_->worker.join();
}

void WorkerStream::enqueue(std::function<void()> operation) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->queue.push_back(std::move(operation));
    ++state_->enqueued;
  }
  state_->work_ready.notify_one();
}

void WorkerStream::work() {
  State& state = *state_;
  uint64_t taken = 0;
  while (true) {
    std::function<void()> operation;
    // More work often follows at once (the caller's next operation): look before sleeping.
    poll_briefly([&] { return state.enqueued.load(std::memory_order_acquire) > taken; },
                 kWorkerPoll, Deadline::after(std::chrono::milliseconds(1)));
    {
      std::unique_lock<std::mutex> lock(state.mutex);
      state.work_ready.wait(lock, [&] { return state.stopping || !state.queue.empty(); });
      if (state.queue.empty()) return;  // stopping and drained
      operation = std::move(state.queue.front());
      state.queue.pop_front();
      ++taken;
    }
    std::exception_ptr error;
    try {
      operation();
    } catch (...) {
      error = std::current_exception();
    }
    operation = nullptr;  // release captured state before reporting completion
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      if (error && !state.first_error) state.first_error = error;
      ++state.completed;
    }
    state.work_done.notify_all();
  }
}

// The copy engine: copies of the copier's threshold (4 MiB) and more whose ranges do not overlap
// run on the stream's worker and the copier's helper thread, which claim 1 MiB pieces in turn;
// smaller or overlapping copies are one memmove on the worker. Measured on the 2-core development
// VM on 2026-11-30 (AMD EPYC, 32 MiB L3; load average under 1; memcpy vs the copier, median of
// 11-21 samples, 3 runs), two threads against one:
//   cache-cold (copies rotating through 512 MiB, so no range is in cache): 1 MiB 1.07-1.18x (256
//   KiB pieces), 4 MiB 1.33-1.41x, 16 MiB 1.40-1.71x, 64 MiB 1.49-1.55x (7-9 GB/s -> 11-13 GB/s);
//   cache-hot (the same buffers again): 1 MiB 0.63x, 4 MiB 0.95x, 16 MiB 1.64-1.90x, 64 MiB
//   1.50-1.69x.
// So the threshold sits where a cold copy gains and a hot one about breaks even. (An earlier
// measurement, splitting over the kernel pool, found 0.6x-1.15x and a loss from 8 MiB up; the
// copier, whose two threads claim pieces in turn, did not reproduce that loss.) Those figures are
// with cached stores; the pieces now go by non-temporal stores (base::streaming_copy), measured
// at 64 MiB in memloom-bench shm and bm (bench/RESULTS.md).
void WorkerStream::submit(hal::StreamWork work) {
  switch (work.kind) {
    case hal::StreamWorkKind::kCopy:
      enqueue([copier = copier_.get(), dst = work.dst, src = work.src, bytes = work.bytes] {
        copier->copy(dst, src, bytes);
      });
      return;
    case hal::StreamWorkKind::kKernel:
      enqueue_kernel(work.kernel);
      return;
    case hal::StreamWorkKind::kHostFunction:
      enqueue(std::move(work.fn));
      return;
  }
  raise(Status::kInvalidInput, "emulated stream: unknown kind of stream work");
}

void WorkerStream::enqueue_kernel(const hal::KernelLaunch& launch) {
  const CpuKernel& kernel = cpu_kernel(launch.id);
  if (launch.args_size != kernel.args_size) {
    raise(Status::kInvalidInput,
          std::string("kernel ") + kernel.name + " takes " + std::to_string(kernel.args_size) +
              " bytes of arguments, got " + std::to_string(launch.args_size));
  }
  // The caller may reuse its argument struct as soon as launch() returns, so it is copied here.
  const size_t words = (kernel.args_size + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  std::shared_ptr<std::max_align_t[]> args(new std::max_align_t[std::max<size_t>(words, 1)]);
  std::memcpy(args.get(), launch.args, kernel.args_size);
  ThreadPool* pool = pool_.get();
  const size_t work_items = launch.work_items;
  enqueue(
      [pool, &kernel, args, work_items] { run_cpu_kernel(*pool, kernel, args.get(), work_items); });
}

std::unique_ptr<hal::Event> WorkerStream::record() {
  auto state = std::make_shared<EventState>();
  enqueue([state] { state->complete(); });
  return std::make_unique<WorkerEvent>(state);
}

void WorkerStream::wait(hal::Event& event) {
  auto* ours = dynamic_cast<WorkerEvent*>(&event);
  MEMLOOM_CHECK_ARG(ours != nullptr, "stream wait on an event of another backend");
  if (ours->state()->done()) return;
  enqueue([state = ours->state()] { state->wait(); });
}

void WorkerStream::synchronize(Deadline deadline) {
  State& state = *state_;
  const uint64_t target = state.enqueued.load(std::memory_order_acquire);
  poll_briefly([&] { return state.completed.load(std::memory_order_acquire) >= target; },
               kCallerPoll, deadline);
  std::unique_lock<std::mutex> lock(state.mutex);
  if (!state.work_done.wait_until(lock, deadline.time_point(),
                                  [&] { return state.completed >= target; })) {
    raise(Status::kTimeout, "stream on emulated device " + std::to_string(device_) + ": " +
                                std::to_string(target - state.completed) +
                                " operations still pending at the deadline");
  }
  if (state.first_error) {
    std::exception_ptr error = state.first_error;
    state.first_error = nullptr;
    lock.unlock();
    std::rethrow_exception(error);
  }
}

}  // namespace memloom::emulated
