// memfabric_hybrid.shm: SHM (symmetric memory), as upstream's pymf_hybrid binds it.
#include <memory>
#include <string>

#include "blocking_call.h"
#include "smem/host/smem_shm.h"
#include "smem_common.h"

namespace memloom::python {

namespace {

class ShareMemory {
 public:
  ShareMemory(smem_shm_t handle, void* gva) : handle_(handle), gva_(gva) {}
  ~ShareMemory() {
    if (handle_ == nullptr) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      smem_shm_destroy(handle_, 0);
    } else {
      smem_shm_destroy(handle_, 0);
    }
  }
  ShareMemory(const ShareMemory&) = delete;
  ShareMemory& operator=(const ShareMemory&) = delete;

  void set_context(py::bytes context) {
    const std::string bytes = context;
    const int code =
        smem_shm_set_extra_context(handle_, bytes.data(), static_cast<uint32_t>(bytes.size()));
    note_inline_result(code);
    if (code != 0) raise_runtime_error("set extern context", code);
  }

  uint32_t local_rank() const { return smem_shm_get_global_rank(handle_); }
  uint32_t rank_size() const { return smem_shm_get_global_rank_size(handle_); }
  uint64_t gva() const { return reinterpret_cast<uintptr_t>(gva_); }

  void destroy(uint32_t flags) {
    smem_shm_t handle = handle_;
    const int code = record(call_interruptibly<SmemOutcome>(
        [handle, flags] { return smem_outcome(smem_shm_destroy(handle, flags)); }));
    if (code != 0) raise_runtime_error("destroy", code);
    handle_ = nullptr;
    gva_ = nullptr;
  }

  uint32_t query_support_data_operation() const { return smem_shm_query_support_data_operation(); }

  void barrier() {
    smem_shm_t handle = handle_;
    const int code = record(call_interruptibly<SmemOutcome>(
        [handle] { return smem_outcome(smem_shm_control_barrier(handle)); }));
    if (code != 0) raise_runtime_error("barrier", code);
  }

  py::bytes all_gather(py::bytes local_data) {
    auto send = std::make_shared<std::string>(local_data);
    const uint32_t ranks = rank_size();
    if (ranks == UINT32_MAX) raise_runtime_error("all gather", -1);
    auto receive = std::make_shared<std::string>(send->size() * ranks, '\0');
    smem_shm_t handle = handle_;
    const int code = record(call_interruptibly<SmemOutcome>([handle, send, receive] {
      return smem_outcome(
          smem_shm_control_allgather(handle, send->data(), static_cast<uint32_t>(send->size()),
                                     receive->data(), static_cast<uint32_t>(receive->size())));
    }));
    if (code != 0) raise_runtime_error("all gather", code);
    return py::bytes(*receive);
  }

  // Upstream returns only the call's code (reach_info is an input there, its result is dropped).
  int topology_can_reach(uint32_t remote_rank, uint32_t reach_info) {
    const int code = smem_shm_topology_can_reach(handle_, remote_rank, &reach_info);
    note_inline_result(code);
    return code;
  }

 private:
  smem_shm_t handle_;
  void* gva_;
};

}  // namespace

void bind_smem_shm(py::module_& m) {
  py::enum_<smem_shm_data_op_type>(m, "ShmDataOpType", py::arithmetic())
      .value("MTE", SMEMS_DATA_OP_MTE)
      .value("SDMA", SMEMS_DATA_OP_SDMA)
      .value("RDMA", SMEMS_DATA_OP_RDMA);
  py::class_<smem_shm_config_t>(m, "ShmConfig")
      .def(py::init([] {
        smem_shm_config_t config;
        smem_shm_config_init(&config);
        return config;
      }))
      .def_readwrite("init_timeout", &smem_shm_config_t::shmInitTimeout)
      .def_readwrite("create_timeout", &smem_shm_config_t::shmCreateTimeout)
      .def_readwrite("operation_timeout", &smem_shm_config_t::controlOperationTimeout)
      .def_readwrite("start_store", &smem_shm_config_t::startConfigStoreServer)
      .def_readwrite("flags", &smem_shm_config_t::flags);

  m.def(
      "initialize",
      [](const std::string& store_url, uint32_t world_size, uint32_t rank_id, uint16_t device_id,
         const smem_shm_config_t& config) {
        return record(
            call_interruptibly<SmemOutcome>([store_url, world_size, rank_id, device_id, config] {
              smem_shm_config_t copy = config;
              return smem_outcome(
                  smem_shm_init(store_url.c_str(), world_size, rank_id, device_id, &copy));
            }));
      },
      py::arg("store_url"), py::arg("world_size"), py::arg("rank_id"), py::arg("device_id"),
      py::arg("config"));
  m.def(
      "uninitialize",
      [](uint32_t flags) {
        call_interruptibly<int>([flags] {
          smem_shm_uninit(flags);
          return 0;
        });
      },
      py::arg("flags") = 0);
  m.def(
      "create",
      [](uint32_t id, uint32_t rank_size, uint32_t rank_id, uint64_t size, uint32_t op_bits,
         uint32_t flags) {
        const auto op = static_cast<smem_shm_data_op_type>(op_bits);  // one or a bit set
        auto made = call_interruptibly<std::pair<SmemOutcome, std::pair<smem_shm_t, void*>>>(
            [id, rank_size, rank_id, size, op, flags] {
              void* gva = nullptr;
              smem_shm_t handle = smem_shm_create(id, rank_size, rank_id, size, op, flags, &gva);
              return std::make_pair(smem_outcome(handle == nullptr ? -1 : 0),
                                    std::make_pair(handle, gva));
            });
        record(made.first);
        if (made.second.first == nullptr) {
          throw std::runtime_error("create shm failed! (" + made.first.message + ")");
        }
        return std::make_unique<ShareMemory>(made.second.first, made.second.second);
      },
      py::arg("id"), py::arg("rank_size"), py::arg("rank_id"), py::arg("local_mem_size"),
      py::arg("data_op_type") = static_cast<uint32_t>(SMEMS_DATA_OP_MTE), py::arg("flags") = 0);

  py::class_<ShareMemory>(m, "ShareMemory")
      .def("set_context", &ShareMemory::set_context, py::arg("context"))
      .def_property_readonly("local_rank", &ShareMemory::local_rank)
      .def_property_readonly("rank_size", &ShareMemory::rank_size)
      .def_property_readonly("gva", &ShareMemory::gva)
      .def("destroy", &ShareMemory::destroy, py::arg("flags") = 0)
      .def("query_support_data_operation", &ShareMemory::query_support_data_operation)
      .def("barrier", &ShareMemory::barrier)
      .def("all_gather", &ShareMemory::all_gather, py::arg("local_data"))
      .def("topology_can_reach", &ShareMemory::topology_can_reach, py::arg("remote_rank"),
           py::arg("reach_info"));
}

}  // namespace memloom::python
