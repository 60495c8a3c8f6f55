#include "errors.h"

#include "smem/host/smem.h"

namespace memloom::python {

namespace {

PyObject* g_error_type = nullptr;

const char* code_name(int code) {
  switch (code) {
    case WHOLEMEMORY_SUCCESS:
      return "SUCCESS";
    case WHOLEMEMORY_UNKNOW_ERROR:
      return "UNKNOW_ERROR";
    case WHOLEMEMORY_NOT_IMPLEMENTED:
      return "NOT_IMPLEMENTED";
    case WHOLEMEMORY_LOGIC_ERROR:
      return "LOGIC_ERROR";
    case WHOLEMEMORY_CUDA_ERROR:
      return "CUDA_ERROR";
    case WHOLEMEMORY_COMMUNICATION_ERROR:
      return "COMMUNICATION_ERROR";
    case WHOLEMEMORY_INVALID_INPUT:
      return "INVALID_INPUT";
    case WHOLEMEMORY_INVALID_VALUE:
      return "INVALID_VALUE";
    case WHOLEMEMORY_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case WHOLEMEMORY_NOT_SUPPORTED:
      return "NOT_SUPPORTED";
    case WHOLEMEMORY_SYSTEM_ERROR:
      return "SYSTEM_ERROR";
    default:
      return "UNKNOWN_CODE";
  }
}

}  // namespace

std::string take_failure_message() {
  // memloom records every API's last failure in one per-thread slot, read through smem.h (the
  // only public accessor; WholeMemory's C API itself only logs).
  const char* message = smem_get_and_clear_last_err_msg();
  return message != nullptr ? message : "";
}

Outcome outcome_of(wholememory_error_code_t code) {
  Outcome outcome;
  outcome.code = static_cast<int>(code);
  if (code != WHOLEMEMORY_SUCCESS) outcome.message = take_failure_message();
  return outcome;
}

void raise_wholememory_error(wholememory_error_code_t code, const std::string& message) {
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object error = type(message);
  error.attr("code") = static_cast<int>(code);
  error.attr("code_name") = code_name(code);
  PyErr_SetObject(g_error_type, error.ptr());
  throw py::error_already_set();
}

void check(const Outcome& outcome, const char* what) {
  if (outcome.code == WHOLEMEMORY_SUCCESS) return;
  const std::string detail =
      outcome.message.empty() ? std::string("no detail recorded") : outcome.message;
  raise_wholememory_error(
      static_cast<wholememory_error_code_t>(outcome.code),
      std::string(what) + " failed (" + code_name(outcome.code) + "): " + detail);
}

void bind_errors(py::module_& module) {
  g_error_type = PyErr_NewExceptionWithDoc(
      "memloom.WholeMemoryError",
      "A WholeMemory call failed: .code is the wholememory_error_code_t, .code_name its name, "
      "and the message is memloom's.",
      PyExc_RuntimeError, nullptr);
  Py_INCREF(g_error_type);
  module.add_object("WholeMemoryError", py::reinterpret_borrow<py::object>(g_error_type));
}

}  // namespace memloom::python
