// CPU threads that split a range of work with the calling thread. The emulated backend runs
// kernel bodies on one pool shared by every stream of the process (so N streams do not
// oversubscribe the cores N times over); large host copies (two_thread_copier.h) use a pool of
// their own.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace memloom::base {

class ThreadPool {
 public:
  using RangeFn = std::function<void(size_t begin, size_t end)>;

  // `parallelism` counts the calling thread, which always works on its own jobs too: a pool of
  // parallelism 1 has no worker threads and runs everything inline.
  explicit ThreadPool(int parallelism);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int parallelism() const { return parallelism_; }

  // Runs fn over [0, items) split into chunks of at least `min_chunk` items, on the workers and the
  // calling thread, and returns once every chunk has run. Rethrows the first exception a chunk
  // threw (the other chunks still run). Safe to call from several threads at once.
  void parallel_for(size_t items, size_t min_chunk, const RangeFn& fn);

 private:
  struct Job;
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::shared_ptr<Job>> jobs;
    bool stopping = false;
    std::vector<std::thread> workers;
  };
  static bool run_one_chunk(Job& job);
  void work();
  void forget(const std::shared_ptr<Job>& job);

  const int parallelism_;
  const pid_t owner_pid_;
  // Heap-held so that a forked child, which inherits the object but not the threads, can abandon
  // it: joining the threads or destroying a condition variable they waited on would block forever.
  std::unique_ptr<State> state_;
};

}  // namespace memloom::base
