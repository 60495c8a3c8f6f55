// memfabric_hybrid's top level: environment, logging, TLS, error messages, the config store.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include "blocking_call.h"
#include "smem/host/smem.h"
#include "smem_common.h"

namespace memloom::python {

namespace {

thread_local std::string t_helper_message;
thread_local bool t_helper_failed = false;

bool python_alive() {
  return Py_IsInitialized() && !_Py_IsFinalizing();
}

std::mutex g_logger_mutex;
std::shared_ptr<py::function> g_logger;

void forward_log(int level, const char* message) {
  if (!python_alive()) return;
  // The GIL first, then the mutex (the order set_extern_logger takes them in), and the copy of
  // the function dies before the GIL is let go.
  py::gil_scoped_acquire gil;
  std::shared_ptr<py::function> logger;
  {
    std::lock_guard<std::mutex> lock(g_logger_mutex);
    logger = g_logger;
  }
  if (!logger) return;
  try {
    (*logger)(level, message != nullptr ? message : "");
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("memfabric_hybrid extern logger");
  }
}

std::mutex g_decrypt_mutex;
std::shared_ptr<py::function> g_decrypt;

int decrypt_with_python(const char* cipher, size_t cipher_length, char* plain,
                        size_t& plain_length) {
  if (!python_alive()) return -1;
  py::gil_scoped_acquire gil;  // before the mutex, as forward_log
  std::shared_ptr<py::function> decrypt;
  {
    std::lock_guard<std::mutex> lock(g_decrypt_mutex);
    decrypt = g_decrypt;
  }
  if (!decrypt) return -1;
  try {
    std::string text = (*decrypt)(py::str(cipher, cipher_length)).cast<std::string>();
    const bool fits = text.size() < plain_length;
    if (fits) {
      text.copy(plain, text.size());
      plain[text.size()] = '\0';
      plain_length = text.size();
    }
    std::fill(text.begin(), text.end(), '\0');  // the password does not linger in freed memory
    return fits ? 0 : -1;
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("memfabric_hybrid decrypt function");
    return -1;
  }
}

std::string last_message(bool clear) {
  std::string message;
  if (t_helper_failed) {
    message = t_helper_message;
  } else {
    const char* own = smem_get_last_err_msg();
    message = own != nullptr ? own : "";
  }
  if (clear) {
    t_helper_failed = false;
    t_helper_message.clear();
    smem_get_and_clear_last_err_msg();
  }
  return message;
}

}  // namespace

void note_helper_failure(int code, const std::string& message) {
  t_helper_failed = code != 0;
  t_helper_message = code != 0 ? message : std::string();
}

SmemOutcome smem_outcome(int code) {
  SmemOutcome outcome{code, {}};
  if (code != 0) {
    const char* message = smem_get_and_clear_last_err_msg();
    outcome.message = message != nullptr ? message : "";
  }
  return outcome;
}

int record(const SmemOutcome& outcome) {
  if (outcome.code != 0) note_helper_failure(outcome.code, outcome.message);
  return outcome.code;
}

void raise_runtime_error(const std::string& what, int code) {
  throw std::runtime_error(what + " failed:" + std::to_string(code) + " (" + last_message(false) +
                           ")");
}

void bind_smem_top(py::module_& m) {
  m.def(
      "initialize", [](uint32_t flags) { return call_released([&] { return smem_init(flags); }); },
      py::arg("flags") = 0, "Initializes the smem environment; 0 on success.");
  m.def(
      "uninitialize",
      [] {
        record(call_interruptibly<SmemOutcome>([] {
          smem_uninit();
          return SmemOutcome{};
        }));
      },
      "Un-initializes the smem environment.");
  m.def(
      "set_log_level", [](int level) { return smem_set_log_level(level); }, py::arg("level"),
      "0 debug, 1 info, 2 warn, 3 error; 0 on success.");
  m.def(
      "set_extern_logger",
      [](py::object log_fn) {
        if (log_fn.is_none()) {
          std::lock_guard<std::mutex> lock(g_logger_mutex);
          g_logger.reset();
          return 0;  // memloom keeps its forwarder, which now drops every line
        }
        if (!PyCallable_Check(log_fn.ptr())) throw py::type_error("log_fn must be callable");
        {
          std::lock_guard<std::mutex> lock(g_logger_mutex);
          g_logger = std::make_shared<py::function>(log_fn);
        }
        const int code = smem_set_extern_logger(&forward_log);
        if (code != 0) throw std::runtime_error("Failed to set logger");
        return code;
      },
      py::arg("log_fn"), "Sends log lines to log_fn(level: int, message: str).");
  m.def(
      "set_conf_store_tls_key",
      [](const std::string& tls_pk, const std::string& tls_pk_pw, py::object decrypt) {
        smem_decrypt_handler handler = nullptr;
        if (!decrypt.is_none()) {
          if (!PyCallable_Check(decrypt.ptr())) {
            throw py::type_error("py_decrypt_func must be callable or None");
          }
          std::lock_guard<std::mutex> lock(g_decrypt_mutex);
          g_decrypt = std::make_shared<py::function>(decrypt);
          handler = &decrypt_with_python;
        }
        return smem_set_config_store_tls_key(tls_pk.data(), static_cast<uint32_t>(tls_pk.size()),
                                             tls_pk_pw.data(),
                                             static_cast<uint32_t>(tls_pk_pw.size()), handler);
      },
      py::arg("tls_pk"), py::arg("tls_pk_pw"), py::arg("py_decrypt_func"));
  m.def(
      "set_conf_store_tls",
      [](bool enable, const std::string& tls_info) {
        return smem_set_conf_store_tls(enable, tls_info.c_str(),
                                       static_cast<uint32_t>(tls_info.size()));
      },
      py::arg("enable"), py::arg("tls_info"));
  m.def(
      "get_last_err_msg", [] { return last_message(false); }, "The last error message.");
  m.def(
      "get_and_clear_last_err_msg", [] { return last_message(true); },
      "The last error message; clears it.");
  m.def(
      "create_config_store",
      [](const std::string& store_url) {
        return record(call_interruptibly<SmemOutcome>(
            [store_url] { return smem_outcome(smem_create_config_store(store_url.c_str())); }));
      },
      py::arg("store_url"), "Starts a config store server in this process; 0 on success.");
  // The forwarder holds Python functions: drop them before the interpreter goes.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    {
      std::lock_guard<std::mutex> lock(g_logger_mutex);
      g_logger.reset();
    }
    std::lock_guard<std::mutex> lock(g_decrypt_mutex);
    g_decrypt.reset();
  }));
}

}  // namespace memloom::python
