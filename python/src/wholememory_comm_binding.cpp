// memloom.wholememory: library set-up, unique ids and communicators.
#include <cstring>
#include <string>

#include "blocking_call.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

py::bytes create_unique_id() {
  wholememory_unique_id_t id{};
  check(wholememory_create_unique_id(&id), "wholememory_create_unique_id");
  return py::bytes(id.internal, sizeof(id.internal));
}

wholememory_unique_id_t unique_id_from(py::handle value) {
  if (!PyBytes_Check(value.ptr())) {
    throw py::type_error("unique_id must be bytes (from create_unique_id), not " +
                         std::string(Py_TYPE(value.ptr())->tp_name));
  }
  const std::string bytes = value.cast<std::string>();
  if (bytes.size() != WHOLEMEMORY_UNIQUE_ID_BYTES) {
    throw py::value_error("unique_id must be " + std::to_string(WHOLEMEMORY_UNIQUE_ID_BYTES) +
                          " bytes, got " + std::to_string(bytes.size()));
  }
  wholememory_unique_id_t id{};
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

Comm create_communicator(py::handle unique_id, int rank, int size) {
  const wholememory_unique_id_t id = unique_id_from(unique_id);
  auto made = call_interruptibly<std::pair<Outcome, wholememory_comm_t>>([id, rank, size] {
    wholememory_comm_t comm = nullptr;
    Outcome outcome = outcome_of(wholememory_create_communicator(&comm, id, rank, size));
    return std::make_pair(outcome, comm);
  });
  check(made.first, "wholememory_create_communicator");
  return Comm{made.second, true};
}

py::object split_communicator(const Comm& comm, int color, int key) {
  wholememory_comm_t parent = comm.get();
  auto made = call_interruptibly<std::pair<Outcome, wholememory_comm_t>>([parent, color, key] {
    wholememory_comm_t child = nullptr;
    Outcome outcome = outcome_of(wholememory_split_communicator(&child, parent, color, key));
    return std::make_pair(outcome, child);
  });
  check(made.first, "wholememory_split_communicator");
  if (made.second == nullptr) return py::none();  // this rank passed WHOLEMEMORY_SPLIT_NOCOLOR
  return py::cast(Comm{made.second, true});
}

void destroy_communicator(Comm& comm) {
  wholememory_comm_t handle = comm.get();
  if (!comm.owned) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT,
                            "this communicator belongs to a tensor; destroy the one it was "
                            "created as");
  }
  check(call_interruptibly<Outcome>(
            [handle] { return outcome_of(wholememory_destroy_communicator(handle)); }),
        "wholememory_destroy_communicator");
  comm.handle = nullptr;
}

int comm_int(const Comm& comm, wholememory_error_code_t (*get)(int*, wholememory_comm_t),
             const char* what) {
  int value = 0;
  check(get(&value, comm.get()), what);
  return value;
}

}  // namespace

void bind_wholememory_comm(py::module_& m) {
  py::enum_<wholememory_memory_type_t>(m, "MemoryType")
      .value("NONE", WHOLEMEMORY_MT_NONE)
      .value("CONTINUOUS", WHOLEMEMORY_MT_CONTINUOUS)
      .value("CHUNKED", WHOLEMEMORY_MT_CHUNKED)
      .value("DISTRIBUTED", WHOLEMEMORY_MT_DISTRIBUTED)
      .value("HIERARCHY", WHOLEMEMORY_MT_HIERARCHY);
  py::enum_<wholememory_memory_location_t>(m, "MemoryLocation")
      .value("NONE", WHOLEMEMORY_ML_NONE)
      .value("DEVICE", WHOLEMEMORY_ML_DEVICE)
      .value("HOST", WHOLEMEMORY_ML_HOST);
  py::enum_<wholememory_distributed_backend_t>(m, "DistributedBackend")
      .value("NONE", WHOLEMEMORY_DB_NONE)
      .value("NCCL", WHOLEMEMORY_DB_NCCL)
      .value("NVSHMEM", WHOLEMEMORY_DB_NVSHMEM);
  py::enum_<LogLevel>(m, "LogLevel")
      .value("FATAL", LEVEL_FATAL)
      .value("ERROR", LEVEL_ERROR)
      .value("WARN", LEVEL_WARN)
      .value("INFO", LEVEL_INFO)
      .value("DEBUG", LEVEL_DEBUG)
      .value("TRACE", LEVEL_TRACE);
  py::enum_<wholememory_dtype_t>(m, "DType")
      .value("UNKNOWN", WHOLEMEMORY_DT_UNKNOWN)
      .value("FLOAT", WHOLEMEMORY_DT_FLOAT)
      .value("HALF", WHOLEMEMORY_DT_HALF)
      .value("DOUBLE", WHOLEMEMORY_DT_DOUBLE)
      .value("BF16", WHOLEMEMORY_DT_BF16)
      .value("INT", WHOLEMEMORY_DT_INT)
      .value("INT64", WHOLEMEMORY_DT_INT64)
      .value("INT16", WHOLEMEMORY_DT_INT16)
      .value("INT8", WHOLEMEMORY_DT_INT8);

  m.def(
      "init",
      [](unsigned flags, LogLevel level) {
        check(wholememory_init(flags, level), "wholememory_init");
      },
      py::arg("flags") = 0, py::arg("log_level") = LEVEL_INFO);
  m.def("finalize", [] {
    check(call_interruptibly<Outcome>([] { return outcome_of(wholememory_finalize()); }),
          "wholememory_finalize");
  });
  m.def("create_unique_id", &create_unique_id,
        "A new communicator id (bytes: picklable, broadcast it to every rank).");
  m.def("create_communicator", &create_communicator, py::arg("unique_id"), py::arg("rank"),
        py::arg("size"), "Collective over `size` processes.");
  m.def("fork_get_device_count", [] { return fork_get_device_count(); });
  m.def("equal_entry_partition_plan", [](size_t total, int world_size) {
    size_t per_rank = 0;
    check(wholememory_equal_entry_partition_plan(&per_rank, total, world_size),
          "wholememory_equal_entry_partition_plan");
    return per_rank;
  });

  py::class_<Comm>(m, "Communicator")
      .def_property_readonly("rank",
                             [](const Comm& c) {
                               return comm_int(c, wholememory_communicator_get_rank,
                                               "wholememory_communicator_get_rank");
                             })
      .def_property_readonly("size",
                             [](const Comm& c) {
                               return comm_int(c, wholememory_communicator_get_size,
                                               "wholememory_communicator_get_size");
                             })
      .def_property_readonly("local_size",
                             [](const Comm& c) {
                               return comm_int(c, wholememory_communicator_get_local_size,
                                               "wholememory_communicator_get_local_size");
                             })
      .def_property_readonly("destroyed", [](const Comm& c) { return c.handle == nullptr; })
      .def("clique_info",
           [](const Comm& c) {
             clique_info_t info{};
             check(wholememory_communicator_get_clique_info(&info, c.get()),
                   "wholememory_communicator_get_clique_info");
             return py::make_tuple(info.is_in_clique, info.clique_first_rank, info.clique_rank,
                                   info.clique_rank_num, info.clique_id, info.clique_num);
           })
      .def("barrier",
           [](const Comm& c) {
             wholememory_comm_t handle = c.get();
             check(call_interruptibly<Outcome>(
                       [handle] { return outcome_of(wholememory_communicator_barrier(handle)); }),
                   "wholememory_communicator_barrier");
           })
      .def("split", &split_communicator, py::arg("color"), py::arg("key") = 0,
           "Collective; returns None on a rank that passed WHOLEMEMORY_SPLIT_NOCOLOR (-1).")
      .def("destroy", &destroy_communicator)
      .def("support_type_location",
           [](const Comm& c, wholememory_memory_type_t type, wholememory_memory_location_t loc) {
             return wholememory_communicator_support_type_location(c.get(), type, loc) ==
                    WHOLEMEMORY_SUCCESS;
           })
      .def("is_intranode",
           [](const Comm& c) { return wholememory_is_intranode_communicator(c.get()); })
      .def_property(
          "distributed_backend",
          [](const Comm& c) { return wholememory_communicator_get_distributed_backend(c.get()); },
          [](const Comm& c, wholememory_distributed_backend_t backend) {
            check(wholememory_communicator_set_distributed_backend(c.get(), backend),
                  "wholememory_communicator_set_distributed_backend");
          });
}

}  // namespace memloom::python
