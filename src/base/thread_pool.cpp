#include "src/base/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <exception>

namespace memloom::base {

namespace {
constexpr size_t kChunksPerThread = 16;
}  // namespace

struct ThreadPool::Job {
  const RangeFn* fn = nullptr;
  size_t items = 0;
  size_t chunk = 0;
  size_t chunks = 0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::mutex mutex;
  std::condition_variable all_finished;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int parallelism)
    : parallelism_(std::max(parallelism, 1)),
      owner_pid_(::getpid()),
      state_(std::make_unique<State>()) {
  state_->workers.reserve(static_cast<size_t>(parallelism_ - 1));
  for (int i = 1; i < parallelism_; ++i) state_->workers.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  if (::getpid() != owner_pid_) {
    (void)state_.release();  // inherited through fork: the threads live only in the parent
    return;
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  for (auto& worker : state_->workers) worker.join();
}

bool ThreadPool::run_one_chunk(Job& job) {
  const size_t index = job.next.fetch_add(1, std::memory_order_relaxed);
  if (index >= job.chunks) return false;
  const size_t begin = index * job.chunk;
  const size_t end = std::min(job.items, begin + job.chunk);
  try {
    (*job.fn)(begin, end);
  } catch (...) {
    std::lock_guard<std::mutex> lock(job.mutex);
    if (!job.error) job.error = std::current_exception();
  }
  if (job.finished.fetch_add(1, std::memory_order_acq_rel) + 1 == job.chunks) {
    std::lock_guard<std::mutex> lock(job.mutex);  // pairs with the waiter's predicate check
    job.all_finished.notify_all();
  }
  return true;
}

void ThreadPool::forget(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto& jobs = state_->jobs;
  auto it = std::find(jobs.begin(), jobs.end(), job);
  if (it != jobs.end()) jobs.erase(it);
}

void ThreadPool::work() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->wake.wait(lock, [this] { return state_->stopping || !state_->jobs.empty(); });
      if (state_->jobs.empty()) return;  // stopping, and nothing left to help with
      job = state_->jobs.front();
    }
    if (!run_one_chunk(*job)) forget(job);  // every chunk is taken: move on to the next job
  }
}

void ThreadPool::parallel_for(size_t items, size_t min_chunk, const RangeFn& fn) {
  if (items == 0) return;
  min_chunk = std::max<size_t>(min_chunk, 1);
  // Many chunks per thread: on a shared machine a thread can be preempted for several time slices,
  // and its peers then finish everything else while it holds its last chunk, so a chunk's size
  // bounds that tail (each chunk costs only an atomic increment).
  const size_t max_chunks = static_cast<size_t>(parallelism_) * kChunksPerThread;
  size_t chunks = std::min((items + min_chunk - 1) / min_chunk, max_chunks);
  if (parallelism_ == 1 || chunks <= 1) {
    fn(0, items);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->items = items;
  job->chunk = (items + chunks - 1) / chunks;
  job->chunks = (items + job->chunk - 1) / job->chunk;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->jobs.push_back(job);
  }
  state_->wake.notify_all();
  while (run_one_chunk(*job)) {
  }
  forget(job);
  {
    // Only chunks already running on workers remain; they are bounded compute, not a peer wait.
    std::unique_lock<std::mutex> lock(job->mutex);
    job->all_finished.wait(
        lock, [&] { return job->finished.load(std::memory_order_acquire) == job->chunks; });
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace memloom::base
