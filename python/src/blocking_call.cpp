#include "blocking_call.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace memloom::python {

namespace {

constexpr auto kSignalCheckInterval = std::chrono::milliseconds(100);

std::atomic<size_t> g_abandoned{0};

struct Task {
  std::function<void()> body;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool abandoned = false;
};

// One helper thread waiting for a task. Idle helpers are reused, so a process that makes a
// thousand barrier calls starts one thread, not a thousand; a helper left inside an interrupted
// call is simply not idle until the call ends.
class Helper {
 public:
  Helper() : thread_([this] { loop(); }) { thread_.detach(); }

  void post(std::shared_ptr<Task> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = std::move(task);
    wake_.notify_one();
  }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<Task> task_;
  std::thread thread_;
};

// Helpers live for the whole process (detached threads). A forked child has none of them (and
// may have forked while another thread held the pool's mutex): it starts with a new pool.
struct IdlePool {
  std::mutex mutex;
  std::vector<Helper*> helpers;
};
IdlePool* g_pool = new IdlePool();  // NOLINT: replaced, never freed, in a forked child
[[maybe_unused]] const int g_fork_handler = pthread_atfork(nullptr, nullptr, [] {
  g_pool = new IdlePool();  // NOLINT: see above
  g_abandoned.store(0);
});

void Helper::loop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return task_ != nullptr; });
      task = std::move(task_);
    }
    task->body();
    {
      std::lock_guard<std::mutex> lock(task->mutex);
      task->done = true;
      if (task->abandoned) g_abandoned.fetch_sub(1);
      task->finished.notify_all();
    }
    task.reset();
    IdlePool* pool = g_pool;
    std::lock_guard<std::mutex> lock(pool->mutex);
    pool->helpers.push_back(this);
  }
}

Helper* take_helper() {
  {
    IdlePool* pool = g_pool;
    std::lock_guard<std::mutex> lock(pool->mutex);
    if (!pool->helpers.empty()) {
      Helper* helper = pool->helpers.back();
      pool->helpers.pop_back();
      return helper;
    }
  }
  return new Helper();  // NOLINT: lives as long as its detached thread, i.e. the process
}

}  // namespace

void run_interruptibly(std::function<void()> body) {
  auto task = std::make_shared<Task>();
  task->body = std::move(body);
  take_helper()->post(task);
  for (;;) {
    bool done = false;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(task->mutex);
      done = task->finished.wait_for(lock, kSignalCheckInterval, [&] { return task->done; });
    }
    if (done) return;
    // Runs Python's handlers of signals that arrived (in the main thread only, as Python does);
    // a handler that raises (SIGINT's default raises KeyboardInterrupt) ends the wait.
    if (PyErr_CheckSignals() != 0) {
      std::lock_guard<std::mutex> lock(task->mutex);
      if (!task->done) {
        task->abandoned = true;
        g_abandoned.fetch_add(1);
      }
      throw py::error_already_set();
    }
  }
}

namespace {

// Python's main thread: signal handlers run there only. Taken when the module loads (from the
// threading module, as the import may run on another thread), and reset in a forked child, whose
// forking thread Python makes its main thread.
unsigned long g_main_thread = 0;
[[maybe_unused]] const int g_main_thread_after_fork =
    pthread_atfork(nullptr, nullptr, [] { g_main_thread = PyThread_get_thread_ident(); });

// memloom's interrupt check: called on the thread inside the C call, which released the GIL
// (gil_scoped_release keeps its thread state, so PyGILState_Ensure takes the GIL back with that
// state and Release gives it up again). A KeyboardInterrupt raised by a handler stays set in the
// thread state for call_one_sided to throw; while it is set, the answer stays "interrupted".
int python_signal_check(void*) {
  const PyGILState_STATE state = PyGILState_Ensure();
  const int interrupted = PyErr_Occurred() != nullptr || PyErr_CheckSignals() != 0;
  PyGILState_Release(state);
  return interrupted;
}

}  // namespace

PythonInterruptScope::PythonInterruptScope()
    : installed_(PyThread_get_thread_ident() == g_main_thread) {
  if (installed_) memloom_interrupt_check_set(&python_signal_check, nullptr);
}

PythonInterruptScope::~PythonInterruptScope() {
  if (installed_) memloom_interrupt_check_set(nullptr, nullptr);
}

size_t abandoned_calls() {
  return g_abandoned.load();
}

void remember_main_thread() {
  g_main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
}

void register_exit_check(py::module_& module) {
  module.def("_abandoned_calls", &abandoned_calls,
             "Interrupted calls still running inside the library (see blocking_call.h).");
  auto check = py::cpp_function([] {
    if (abandoned_calls() == 0) return;
    auto sys = py::module_::import("sys");
    for (const char* stream : {"stdout", "stderr"}) {
      try {
        sys.attr(stream).attr("flush")();
      } catch (const py::error_already_set&) {
        // A closed stream: nothing left to flush.
      }
    }
    // As Python ends a process after an uncaught KeyboardInterrupt: by SIGINT's default action.
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
  });
  py::module_::import("atexit").attr("register")(check);
}

}  // namespace memloom::python
