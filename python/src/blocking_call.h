// How the bindings run C calls without holding the GIL. Shared by every package (memloom,
// memfabric_hybrid, pylibwholegraph): there is one copy of this policy.
//
// - Data-path calls (TRANS reads and writes, BM copies, gather/scatter) run on the calling
//   thread with the GIL released: no hand-off, so a call costs what the C call costs plus
//   pybind11's argument conversion. They are bounded by the library's own deadlines.
// - Calls that wait on peers (init, create, join, barrier, collectives, file I/O, destroy of a
//   collective object) run on a helper thread while the caller waits with the GIL released and
//   looks at Python's pending signals every 100 ms. A Ctrl-C raises KeyboardInterrupt within that
//   slice; the C call is left to end at its own deadline, and the process stays cleanable: at
//   exit, if such a call is still inside the library, the process ends by SIGINT's default action
//   (as Python does for an uncaught KeyboardInterrupt) instead of running the library's
//   destructors under a thread that still uses it.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

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

// Interrupted calls still running inside the library.
size_t abandoned_calls();

// Registers the exit check described above (once, from the module's initialisation).
void register_exit_check(py::module_& module);

}  // namespace memloom::python
