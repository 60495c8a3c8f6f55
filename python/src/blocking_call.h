// How the bindings run C calls without holding the GIL. Shared by every package (memloom,
// memfabric_hybrid, pylibwholegraph): there is one copy of this policy.
//
// - One-sided data-path calls (TRANS reads and writes, BM copies) and gathers/scatters of a
//   one-rank table run on the calling thread with the GIL released: no hand-off, so a call costs
//   what the C call costs plus pybind11's argument conversion. They are bounded by the library's
//   own deadlines. Gathers, scatters and embedding steps of tables spanning several ranks wait on
//   those ranks, so they run as the calls below (call_data_path), a hand-off of tens of
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

// Registers the exit check described above (once, from the module's initialisation).
void register_exit_check(py::module_& module);

}  // namespace memloom::python
