// How the bindings run C calls without holding the GIL. Shared by every package (memloom,
// memfabric_hybrid, pylibwholegraph): there is one copy of this policy.
//
// - One-sided data-path calls (TRANS reads and writes, BM copies) run on the calling thread with
//   the GIL released (call_one_sided): no hand-off, so a call costs what the C call costs plus
//   pybind11's argument conversion. Around them Python's signal check is memloom's interrupt
//   check for this thread (memloom/interrupt.h): while the call waits on a peer, the library asks
//   it every 100 ms, and a Ctrl-C ends the call (the library closes the connection it used) and
//   raises KeyboardInterrupt. Gathers/scatters of a one-rank table wait on no peer
//   (call_released). Gathers, scatters and embedding steps of tables spanning several ranks wait
//   on those ranks, so they run as the calls below (call_data_path), a hand-off of tens of
//   microseconds next to calls that exchange rows between processes.
// - Calls that wait on peers (init, create, join, barrier, collectives, file I/O, destroy of a
//   collective object) run on a helper thread while the caller waits with the GIL released and
//   looks at Python's pending signals every 100 ms. A Ctrl-C raises KeyboardInterrupt within that
//   slice; the C call is left to end at its own deadline, and the process stays cleanable: at
//   exit, if such a call is still inside the library, the process ends by SIGINT's default action
//   (as Python does for an uncaught KeyboardInterrupt) instead of running the library's
//   destructors under a thread that still uses it.
#pragma once

#include <pybind11/pybind11.h>

#include "memloom/interrupt.h"

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace memloom::python {

namespace py = pybind11;

// Runs body on a helper thread; see above. Call with the GIL held. body must own (capture by
// value) everything it touches, since it may outlive the call when interrupted.
void run_interruptibly(std::function<void()> body);

template <typename R>
R call_interruptibly(std::function<R()> call) {
  auto result = std::make_shared<std::optional<R>>();
  auto error = std::make_shared<std::exception_ptr>();
  run_interruptibly([call = std::move(call), result, error] {
    try {
      result->emplace(call());
    } catch (...) {
      *error = std::current_exception();
    }
  });
  if (*error) std::rethrow_exception(*error);
  return std::move(**result);
}

// Runs f on this thread with the GIL released.
template <typename F>
auto call_released(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// Installs Python's signal check as this thread's interrupt check for the scope, on Python's main
// thread only (the only one whose check can run a handler); elsewhere it does nothing. Construct
// it with the GIL held. Costs a thread-id comparison and two thread-local stores.
class PythonInterruptScope {
 public:
  PythonInterruptScope();
  ~PythonInterruptScope();
  PythonInterruptScope(const PythonInterruptScope&) = delete;
  PythonInterruptScope& operator=(const PythonInterruptScope&) = delete;

 private:
  bool installed_;
};

// A one-sided data-path call (see above): f runs on this thread with the GIL released and Python's
// signal check installed. When a signal handler raised meanwhile (KeyboardInterrupt), the error it
// left set is thrown here, whatever f returned (the library's "interrupted" code).
template <typename F>
auto call_one_sided(F&& f) {
  decltype(f()) result;
  {
    PythonInterruptScope interruptible;
    py::gil_scoped_release release;
    result = f();
  }
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  return result;
}

// A data-path call (gather, scatter, an embedding step): when the table spans several ranks it
// may wait on them, so it runs like call_interruptibly (Ctrl-C raises KeyboardInterrupt within
// 100 ms); otherwise on this thread with the GIL released, as call_released. `keep` holds the
// Python objects whose memory the call reads or writes: an interrupted call goes on until its own
// deadline, so they stay alive until the C call ends and are then released under the GIL.
template <typename R, typename F>
R call_data_path(bool waits_on_peers, std::vector<py::object> keep, F call) {
  if (!waits_on_peers) return call_released(call);
  std::shared_ptr<std::vector<py::object>> kept(new std::vector<py::object>(std::move(keep)),
                                                [](std::vector<py::object>* objects) {
                                                  py::gil_scoped_acquire gil;
                                                  delete objects;
                                                });
  return call_interruptibly<R>([call = std::move(call), kept]() mutable {
    R result = call();
    return result;
  });
}

// Interrupted calls still running inside the library.
size_t abandoned_calls();

// Takes note of Python's main thread for PythonInterruptScope (once, from the module's
// initialisation).
void remember_main_thread();

// Registers the exit check described above (once, from the module's initialisation).
void register_exit_check(py::module_& module);

}  // namespace memloom::python
