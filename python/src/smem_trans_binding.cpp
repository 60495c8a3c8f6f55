// memfabric_hybrid.TransferEngine: TRANS as upstream's Python adapter (pytransfer) binds it:
// roles "Prefill" (sends) and "Decode" (receives), C codes returned as they are.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <vector>

#include "array_ref.h"
#include "blocking_call.h"
#include "smem/host/smem_trans.h"
#include "smem_common.h"

namespace memloom::python {

namespace {

enum class TransferOpcode { kRead = 0, kWrite = 1 };
enum class TransDataOpType : uint32_t {
  kSdma = SMEMB_DATA_OP_SDMA,
  kDeviceRdma = SMEMB_DATA_OP_DEVICE_RDMA,
};

// The peer's name without a copy: the str's own UTF-8 form, which Python caches.
const char* peer_name(py::handle name) {
  if (!PyUnicode_Check(name.ptr())) {
    throw py::type_error("dest_session must be a str (\"ip:port\"), not " +
                         std::string(Py_TYPE(name.ptr())->tp_name));
  }
  const char* text = PyUnicode_AsUTF8(name.ptr());
  if (text == nullptr) throw py::error_already_set();
  return text;
}

std::vector<void*> addresses(const std::vector<py::handle>& objects,
                             const std::vector<size_t>* sizes, bool writable, const char* what) {
  std::vector<void*> out(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    out[i] = reinterpret_cast<void*>(
        address_of(objects[i], sizes != nullptr ? (*sizes)[i] : 0, writable, what));
  }
  return out;
}

class TransferEngine {
 public:
  TransferEngine() = default;
  ~TransferEngine() = default;  // as upstream: destroy() / unInitialize() end an instance

  int initialize(const std::string& store_url, const std::string& session_id,
                 const std::string& role, uint32_t device_id, uint32_t data_op_type) {
    if (role != "Prefill" && role != "Decode") {
      note_helper_failure(-1,
                          "TransferEngine.initialize: role must be 'Prefill' or 'Decode', "
                          "not '" +
                              role + "'");
      return -1;
    }
    auto made = call_interruptibly<std::pair<SmemOutcome, smem_trans_t>>(
        [store_url, session_id, role, device_id, data_op_type] {
          smem_trans_config_t config;
          int code = smem_trans_config_init(&config);
          if (code != 0) return std::make_pair(smem_outcome(code), smem_trans_t{nullptr});
          config.role = role == "Prefill" ? SMEM_TRANS_SENDER : SMEM_TRANS_RECEIVER;
          config.deviceId = device_id;
          config.dataOpType = static_cast<smem_bm_data_op_type>(data_op_type);
          code = smem_trans_init(&config);
          if (code != 0) return std::make_pair(smem_outcome(code), smem_trans_t{nullptr});
          smem_trans_t handle = smem_trans_create(store_url.c_str(), session_id.c_str(), &config);
          return std::make_pair(smem_outcome(handle == nullptr ? -1 : 0), handle);
        });
    if (made.second == nullptr) return record(made.first);
    handle_ = made.second;
    return 0;
  }

  // A TCP port free at this moment (the kernel picks it), for the caller's unique id.
  int get_rpc_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t length = sizeof(address);
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
    close(fd);
    return port;
  }

  int write(py::handle dest, py::handle buffer, py::handle peer, size_t length) {
    const char* name = peer_name(dest);
    const void* local = reinterpret_cast<const void*>(address_of(buffer, length, false, "buffer"));
    void* remote = reinterpret_cast<void*>(address_of(peer, 0, false, "peer_buffer"));
    smem_trans_t handle = handle_;
    const int code =
        call_one_sided([&] { return smem_trans_write(handle, local, name, remote, length, 0); });
    note_inline_result(code);
    return code;
  }

  int read(py::handle dest, py::handle buffer, py::handle peer, size_t length) {
    const char* name = peer_name(dest);
    void* local = reinterpret_cast<void*>(address_of(buffer, length, true, "buffer"));
    const void* remote = reinterpret_cast<const void*>(address_of(peer, 0, false, "peer_buffer"));
    smem_trans_t handle = handle_;
    const int code =
        call_one_sided([&] { return smem_trans_read(handle, local, name, remote, length, 0); });
    note_inline_result(code);
    return code;
  }

  int batch(py::handle dest, const std::vector<py::handle>& buffers,
            const std::vector<py::handle>& peers, std::vector<size_t> lengths, bool is_write) {
    if (buffers.size() != peers.size() || buffers.size() != lengths.size() ||
        buffers.size() > UINT32_MAX) {
      note_helper_failure(-1, "buffers, peer_buffers and lengths differ in length or are too long");
      return -1;
    }
    const char* name = peer_name(dest);
    std::vector<void*> local = addresses(buffers, &lengths, !is_write, "buffers[i]");
    std::vector<void*> remote = addresses(peers, nullptr, false, "peer_buffers[i]");
    const auto count = static_cast<uint32_t>(buffers.size());
    smem_trans_t handle = handle_;
    const int code = call_one_sided([&] {
      if (is_write) {
        return smem_trans_batch_write(handle, const_cast<const void**>(local.data()), name,
                                      remote.data(), lengths.data(), count, 0);
      }
      return smem_trans_batch_read(handle, local.data(), name,
                                   const_cast<const void**>(remote.data()), lengths.data(), count,
                                   0);
    });
    note_inline_result(code);
    return code;
  }

  int submit(py::handle dest, py::handle buffer, py::handle peer, size_t length, uintptr_t stream,
             bool is_write) {
    const char* name = peer_name(dest);
    void* local = reinterpret_cast<void*>(address_of(buffer, length, !is_write, "buffer"));
    void* remote = reinterpret_cast<void*>(address_of(peer, 0, false, "peer_buffer"));
    smem_trans_t handle = handle_;
    void* on = reinterpret_cast<void*>(stream);
    const int code = call_released([&] {
      return is_write ? smem_trans_write_submit(handle, local, name, remote, length, on, 0)
                      : smem_trans_read_submit(handle, local, name, remote, length, on, 0);
    });
    note_inline_result(code);
    return code;
  }

  int register_memory(py::handle buffer, size_t capacity) {
    void* at = reinterpret_cast<void*>(address_of(buffer, capacity, true, "buffer_addr"));
    smem_trans_t handle = handle_;
    return record(call_interruptibly<SmemOutcome>([handle, at, capacity] {
      return smem_outcome(smem_trans_register_mem(handle, at, capacity, 0));
    }));
  }

  int unregister_memory(py::handle buffer) {
    void* at = reinterpret_cast<void*>(address_of(buffer, 0, false, "buffer_addr"));
    smem_trans_t handle = handle_;
    return record(call_interruptibly<SmemOutcome>(
        [handle, at] { return smem_outcome(smem_trans_deregister_mem(handle, at)); }));
  }

  int batch_register_memory(const std::vector<py::handle>& buffers, std::vector<size_t> sizes) {
    if (buffers.size() != sizes.size() || buffers.size() > UINT32_MAX) {
      note_helper_failure(-1, "buffer_addrs and capacities differ in length");
      return -1;
    }
    auto at = addresses(buffers, &sizes, true, "buffer_addrs[i]");
    smem_trans_t handle = handle_;
    return record(call_interruptibly<SmemOutcome>([handle, at, sizes]() mutable {
      return smem_outcome(smem_trans_batch_register_mem(handle, at.data(), sizes.data(),
                                                        static_cast<uint32_t>(at.size()), 0));
    }));
  }

  // The benchmark's reference: the same write as write(), `repeats` times in a C++ loop;
  // returns seconds per call.
  double time_c_write(py::handle dest, py::handle buffer, py::handle peer, size_t length,
                      int repeats) {
    const char* name = peer_name(dest);
    const void* local = reinterpret_cast<const void*>(address_of(buffer, length, false, "buffer"));
    void* remote = reinterpret_cast<void*>(address_of(peer, 0, false, "peer_buffer"));
    smem_trans_t handle = handle_;
    return call_released([&] {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < repeats; ++i) {
        if (smem_trans_write(handle, local, name, remote, length, 0) != 0) return -1.0;
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      return took.count() / repeats;
    });
  }

  void destroy() {
    smem_trans_t handle = handle_;
    handle_ = nullptr;
    if (handle == nullptr) return;
    call_interruptibly<int>([handle] {
      smem_trans_destroy(handle, 0);
      return 0;
    });
  }

  void uninitialize() {
    handle_ = nullptr;  // smem_trans_uninit destroys every instance still alive
    call_interruptibly<int>([] {
      smem_trans_uninit(0);
      return 0;
    });
  }

 private:
  smem_trans_t handle_ = nullptr;
};

// transfer_sync_write is the call a serving stack makes per KV block, so it is bound as a plain
// CPython fast-call function: pybind11's generic dispatch alone costs about a microsecond. Only
// the form upstream's callers use takes this path (engine, str, int, int, int, no keywords);
// every other form goes to the pybind11 binding (_transfer_sync_write), which checks and explains.
PyObject* g_checked_sync_write = nullptr;

PyObject* fast_sync_write(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t count = PyVectorcall_NARGS(nargsf);
  if (kwnames == nullptr && count == 5 && PyUnicode_Check(args[1]) && PyLong_CheckExact(args[2]) &&
      PyLong_CheckExact(args[3]) && PyLong_CheckExact(args[4])) {
    const py::handle self(args[0]);
    if (py::isinstance<TransferEngine>(self)) {
      auto* engine = self.cast<TransferEngine*>();
      const size_t length = PyLong_AsSize_t(args[4]);
      if (length != static_cast<size_t>(-1) || !PyErr_Occurred()) {
        try {
          return PyLong_FromLong(engine->write(args[1], args[2], args[3], length));
        } catch (py::error_already_set& error) {
          error.restore();
          return nullptr;
        } catch (py::builtin_exception& error) {
          error.set_error();
          return nullptr;
        }
      }
      PyErr_Clear();
    }
  }
  return PyObject_Vectorcall(g_checked_sync_write, args, nargsf, kwnames);
}

PyMethodDef g_fast_sync_write_def = {
    "transfer_sync_write",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_sync_write)),
    METH_FASTCALL | METH_KEYWORDS,
    "transfer_sync_write(dest_session, buffer, peer_buffer, length) -> int: writes length bytes "
    "from buffer to peer_buffer in the registered memory of dest_session (\"ip:port\")."};

}  // namespace

void bind_smem_trans(py::module_& m) {
  py::enum_<TransferOpcode> opcode(m, "TransferOpcode", py::arithmetic());
  opcode.value("Read", TransferOpcode::kRead)
      .value("Write", TransferOpcode::kWrite)
      .export_values();
  // pythonAPI.md spells them READ / WRITE; the binding Read / Write: both name the same values.
  opcode.attr("READ") = opcode.attr("Read");
  opcode.attr("WRITE") = opcode.attr("Write");
  py::enum_<TransDataOpType> data_op(m, "TransDataOpType", py::arithmetic());
  data_op.value("SDMA", TransDataOpType::kSdma)
      .value("DEVICE_RDMA", TransDataOpType::kDeviceRdma)
      .export_values();

  py::class_<TransferEngine> engine(m, "TransferEngine");
  engine.def(py::init<>())
      .def("initialize", &TransferEngine::initialize, py::arg("store_url"), py::arg("session_id"),
           py::arg("role"), py::arg("device_id"),
           py::arg("data_op_type") = static_cast<uint32_t>(TransDataOpType::kSdma))
      .def("get_rpc_port", &TransferEngine::get_rpc_port)
      .def("_transfer_sync_write", &TransferEngine::write, py::arg("dest_session"),
           py::arg("buffer"), py::arg("peer_buffer"), py::arg("length"))
      .def("transfer_sync_read", &TransferEngine::read, py::arg("dest_session"), py::arg("buffer"),
           py::arg("peer_buffer"), py::arg("length"))
      .def(
          "batch_transfer_sync_write",
          [](TransferEngine& e, py::handle dest, const std::vector<py::handle>& buffers,
             const std::vector<py::handle>& peers, std::vector<size_t> lengths) {
            return e.batch(dest, buffers, peers, std::move(lengths), true);
          },
          py::arg("dest_session"), py::arg("buffers"), py::arg("peer_buffers"), py::arg("lengths"))
      .def(
          "batch_transfer_sync_read",
          [](TransferEngine& e, py::handle dest, const std::vector<py::handle>& buffers,
             const std::vector<py::handle>& peers, std::vector<size_t> lengths) {
            return e.batch(dest, buffers, peers, std::move(lengths), false);
          },
          py::arg("dest_session"), py::arg("buffers"), py::arg("peer_buffers"), py::arg("lengths"))
      .def(
          "transfer_async_write_submit",
          [](TransferEngine& e, py::handle dest, py::handle buffer, py::handle peer, size_t length,
             uintptr_t stream) { return e.submit(dest, buffer, peer, length, stream, true); },
          py::arg("dest_session"), py::arg("buffer"), py::arg("peer_buffer"), py::arg("length"),
          py::arg("stream"))
      .def(
          "transfer_async_read_submit",
          [](TransferEngine& e, py::handle dest, py::handle buffer, py::handle peer, size_t length,
             uintptr_t stream) { return e.submit(dest, buffer, peer, length, stream, false); },
          py::arg("dest_session"), py::arg("buffer"), py::arg("peer_buffer"), py::arg("length"),
          py::arg("stream"))
      .def("register_memory", &TransferEngine::register_memory, py::arg("buffer_addr"),
           py::arg("capacity"))
      .def("unregister_memory", &TransferEngine::unregister_memory, py::arg("buffer_addr"))
      .def("batch_register_memory", &TransferEngine::batch_register_memory, py::arg("buffer_addrs"),
           py::arg("capacities"))
      .def("_time_c_write", &TransferEngine::time_c_write)
      .def("destroy", &TransferEngine::destroy)
      .def("unInitialize", &TransferEngine::uninitialize);
  g_checked_sync_write = engine.attr("_transfer_sync_write").ptr();
  Py_INCREF(g_checked_sync_write);
  PyObject* fast = PyCFunction_NewEx(&g_fast_sync_write_def, nullptr, nullptr);
  if (fast == nullptr) throw py::error_already_set();
  PyObject* method = PyInstanceMethod_New(fast);  // binds the engine as args[0]
  Py_DECREF(fast);
  if (method == nullptr) throw py::error_already_set();
  engine.attr("transfer_sync_write") = py::reinterpret_steal<py::object>(method);
  engine.attr("TransferOpcode") = opcode;
  engine.attr("TransDataOpType") = data_op;
}

}  // namespace memloom::python
