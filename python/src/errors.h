// C error codes to Python exceptions for the plain memloom module (the drop-in packages return
// upstream's codes instead), with memloom's message for the failure.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "wholememory/wholememory.h"

namespace memloom::python {

namespace py = pybind11;

// The outcome of a C call, taken on the thread that made it: memloom keeps the message of the
// last failure per thread, so a call run on a helper thread must read it there.
struct Outcome {
  int code = 0;
  std::string message;
};

// The calling thread's last failure message (cleared), "" when none.
std::string take_failure_message();

Outcome outcome_of(wholememory_error_code_t code);

// Raises memloom.WholeMemoryError (a RuntimeError with .code, the WholeMemory error code, and
// .code_name) unless outcome is a success. `what` names the operation.
void check(const Outcome& outcome, const char* what);
inline void check(wholememory_error_code_t code, const char* what) {
  check(outcome_of(code), what);
}

[[noreturn]] void raise_wholememory_error(wholememory_error_code_t code,
                                          const std::string& message);

void bind_errors(py::module_& module);

}  // namespace memloom::python
