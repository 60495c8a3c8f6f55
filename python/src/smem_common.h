// What the memfabric_hybrid bindings share: upstream's return conventions (C codes returned as
// they are, with get_last_err_msg() explaining them) across the helper threads of blocking_call.h.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace memloom::python {

namespace py = pybind11;

// Failures of calls run on a helper thread are recorded here (memloom keeps each message on the
// thread that failed); a failure on the calling thread clears it, so the newest one wins.
void note_helper_failure(int code, const std::string& message);
inline void note_inline_result(int code) {
  if (code != 0) note_helper_failure(0, std::string());
}

// An smem call's code and (on failure) its message, taken on the thread that ran it.
struct SmemOutcome {
  int code = 0;
  std::string message;
};
SmemOutcome smem_outcome(int code);
// Records a helper thread's outcome for get_last_err_msg() and returns its code.
int record(const SmemOutcome& outcome);

// Upstream raises RuntimeError("<what> failed:<code>") for some calls; memloom adds its message.
[[noreturn]] void raise_runtime_error(const std::string& what, int code);

void bind_smem_top(py::module_& module);
void bind_smem_bm(py::module_& module);
void bind_smem_shm(py::module_& module);
void bind_smem_trans(py::module_& module);

}  // namespace memloom::python
