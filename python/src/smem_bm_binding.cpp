// memfabric_hybrid.bm: BM (big memory), as upstream's pymf_hybrid binds it.
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "array_ref.h"
#include "blocking_call.h"
#include "smem/host/smem_bm.h"
#include "smem_common.h"

namespace memloom::python {

namespace {

uint32_t g_world_size = 0;

// smem_bm_join as either published form declares it: (handle, flags, &localGvaAddress) in
// memloom's header until now, (handle, flags) as in upstream's. The Python API takes no address.
template <typename Join>
int32_t join_with(Join join, smem_bm_t handle, uint32_t flags) {
  if constexpr (std::is_invocable_v<Join, smem_bm_t, uint32_t, void**>) {
    void* local = nullptr;
    return join(handle, flags, &local);
  } else {
    return join(handle, flags);
  }
}

class BigMemory {
 public:
  explicit BigMemory(smem_bm_t handle) : handle_(handle) {}
  // Upstream destroys the object when its Python wrapper goes; leaving may wait on peers, so
  // without the GIL.
  ~BigMemory() {
    if (handle_ == nullptr) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      smem_bm_destroy(handle_);
    } else {
      smem_bm_destroy(handle_);
    }
  }
  BigMemory(const BigMemory&) = delete;
  BigMemory& operator=(const BigMemory&) = delete;

  int join(uint32_t flags) {
    smem_bm_t handle = handle_;
    const int code = record(call_interruptibly<SmemOutcome>(
        [handle, flags] { return smem_outcome(join_with(&smem_bm_join, handle, flags)); }));
    if (code != 0) raise_runtime_error("join bm", code);
    return 0;
  }

  int leave(uint32_t flags) {
    smem_bm_t handle = handle_;
    const int code = record(call_interruptibly<SmemOutcome>(
        [handle, flags] { return smem_outcome(smem_bm_leave(handle, flags)); }));
    if (code != 0) raise_runtime_error("leave bm", code);
    return 0;
  }

  uint64_t local_mem_size(smem_bm_mem_type type) {
    return smem_bm_get_local_mem_size_by_mem_type(handle_, type);
  }

  uint64_t peer_rank_ptr(uint32_t rank, smem_bm_mem_type type) {
    if (rank > UINT16_MAX) throw std::runtime_error("get remote ptr failed: rank out of range");
    void* pointer = smem_bm_ptr_by_mem_type(handle_, type, static_cast<uint16_t>(rank));
    if (pointer == nullptr) {
      note_inline_result(-1);
      throw std::runtime_error(std::string("get remote ptr failed: ") + smem_get_last_err_msg());
    }
    return reinterpret_cast<uintptr_t>(pointer);
  }

  void destroy() {
    if (handle_ != nullptr) {
      smem_bm_t handle = handle_;
      handle_ = nullptr;
      call_interruptibly<int>([handle] {
        smem_bm_destroy(handle);
        return 0;
      });
    }
  }

  int register_memory(py::handle address, uint64_t size) {
    const uintptr_t at = address_of(address, size, true, "addr");
    const int code = smem_bm_register_user_mem(handle_, at, size);
    note_inline_result(code);
    return code;
  }

  int unregister_memory(py::handle address) {
    const uintptr_t at = address_of(address, 0, false, "addr");
    const int code = smem_bm_unregister_user_mem(handle_, at);
    note_inline_result(code);
    return code;
  }

  void copy_data(py::handle src, py::handle dst, uint64_t size, smem_bm_copy_type type,
                 uint32_t flags) {
    smem_copy_params params{reinterpret_cast<const void*>(address_of(src, size, false, "src_ptr")),
                            reinterpret_cast<void*>(address_of(dst, size, true, "dst_ptr")), size};
    smem_bm_t handle = handle_;
    const int code = call_one_sided([&] { return smem_bm_copy(handle, &params, type, flags); });
    note_inline_result(code);
    if (code != 0) raise_runtime_error("copy bm data", code);
  }

  int copy_data_batch(const std::vector<py::handle>& srcs, const std::vector<py::handle>& dsts,
                      const std::vector<uint64_t>& sizes, uint32_t count, smem_bm_copy_type type,
                      uint32_t flags) {
    if (srcs.size() < count || dsts.size() < count || sizes.size() < count) {
      throw py::value_error("src_addrs, dst_addrs and sizes must each hold count entries");
    }
    std::vector<void*> sources(count), destinations(count);
    for (uint32_t i = 0; i < count; ++i) {
      sources[i] = reinterpret_cast<void*>(address_of(srcs[i], sizes[i], false, "src_addrs[i]"));
      destinations[i] =
          reinterpret_cast<void*>(address_of(dsts[i], sizes[i], true, "dst_addrs[i]"));
    }
    smem_batch_copy_params params{sources.data(), destinations.data(), sizes.data(), count};
    smem_bm_t handle = handle_;
    const int code =
        call_one_sided([&] { return smem_bm_copy_batch(handle, &params, type, flags); });
    note_inline_result(code);
    return code;
  }

 private:
  smem_bm_t handle_;
};

void set_nic(smem_bm_config_t& config, const std::string& nic) {
  if (nic.size() >= sizeof(config.hcomUrl)) {
    throw py::value_error("nic must be shorter than " + std::to_string(sizeof(config.hcomUrl)) +
                          " characters");
  }
  std::memset(config.hcomUrl, 0, sizeof(config.hcomUrl));
  nic.copy(config.hcomUrl, nic.size());
}

}  // namespace

void bind_smem_bm(py::module_& m) {
  py::enum_<smem_bm_mem_type>(m, "BmMemType")
      .value("DEVICE", SMEM_MEM_TYPE_DEVICE)
      .value("HOST", SMEM_MEM_TYPE_HOST);
  py::enum_<smem_bm_copy_type>(m, "BmCopyType")
      .value("L2G", SMEMB_COPY_L2G)
      .value("G2L", SMEMB_COPY_G2L)
      .value("G2H", SMEMB_COPY_G2H)
      .value("H2G", SMEMB_COPY_H2G)
      .value("L2GH", SMEMB_COPY_L2GH)
      .value("GH2L", SMEMB_COPY_GH2L)
      .value("GH2H", SMEMB_COPY_GH2H)
      .value("H2GH", SMEMB_COPY_H2GH)
      .value("G2G", SMEMB_COPY_G2G);
  py::enum_<smem_bm_data_op_type>(m, "BmDataOpType", py::arithmetic())
      .value("SDMA", SMEMB_DATA_OP_SDMA)
      .value("HOST_RDMA", SMEMB_DATA_OP_HOST_RDMA)
      .value("HOST_URMA", SMEMB_DATA_OP_HOST_URMA)
      .value("HOST_TCP", SMEMB_DATA_OP_HOST_TCP)
      .value("DEVICE_RDMA", SMEMB_DATA_OP_DEVICE_RDMA);

  py::class_<smem_bm_config_t>(m, "BmConfig")
      .def(py::init([] {
        smem_bm_config_t config;
        smem_bm_config_init(&config);
        return config;
      }))
      .def_readwrite("init_timeout", &smem_bm_config_t::initTimeout)
      .def_readwrite("create_timeout", &smem_bm_config_t::createTimeout)
      .def_readwrite("operation_timeout", &smem_bm_config_t::controlOperationTimeout)
      .def_readwrite("start_store", &smem_bm_config_t::startConfigStoreServer)
      .def_readwrite("start_store_only", &smem_bm_config_t::startConfigStoreOnly)
      .def_readwrite("dynamic_world_size", &smem_bm_config_t::dynamicWorldSize)
      .def_readwrite("unified_address_space", &smem_bm_config_t::unifiedAddressSpace)
      .def_readwrite("auto_ranking", &smem_bm_config_t::autoRanking)
      .def_readwrite("rank_id", &smem_bm_config_t::rankId)
      .def_readwrite("flags", &smem_bm_config_t::flags)
      .def("set_nic", &set_nic, py::arg("nic"));

  m.def(
      "initialize",
      [](const std::string& store_url, uint32_t world_size, uint16_t device_id,
         const smem_bm_config_t& config) {
        g_world_size = world_size;
        return record(call_interruptibly<SmemOutcome>([store_url, world_size, device_id, config] {
          return smem_outcome(smem_bm_init(store_url.c_str(), world_size, device_id, &config));
        }));
      },
      py::arg("store_url"), py::arg("world_size"), py::arg("device_id"), py::arg("config"));
  m.def(
      "uninitialize",
      [](uint32_t flags) {
        call_interruptibly<int>([flags] {
          smem_bm_uninit(flags);
          return 0;
        });
      },
      py::arg("flags") = 0);
  m.def("bm_rank_id", [] { return smem_bm_get_rank_id(); });
  m.def(
      "create",
      [](uint32_t id, uint64_t dram, uint64_t hbm, uint32_t op_bits, uint32_t flags) {
        // A BmDataOpType or a bit set of them (BmDataOpType.SDMA | BmDataOpType.HOST_TCP).
        const auto op = static_cast<smem_bm_data_op_type>(op_bits);
        const uint32_t members = g_world_size;
        auto made = call_interruptibly<std::pair<SmemOutcome, smem_bm_t>>(
            [id, members, op, dram, hbm, flags] {
              smem_bm_t handle = smem_bm_create(id, members, op, dram, hbm, flags);
              return std::make_pair(smem_outcome(handle == nullptr ? -1 : 0), handle);
            });
        record(made.first);
        if (made.second == nullptr) {
          throw std::runtime_error("create bm handle failed. (" + made.first.message + ")");
        }
        return std::make_unique<BigMemory>(made.second);
      },
      py::arg("id"), py::arg("local_dram_size"), py::arg("local_hbm_size"),
      py::arg("data_op_type") = static_cast<uint32_t>(SMEMB_DATA_OP_SDMA), py::arg("flags") = 0);

  py::class_<BigMemory>(m, "BigMemory")
      .def("join", &BigMemory::join, py::arg("flags") = 0)
      .def("leave", &BigMemory::leave, py::arg("flags") = 0)
      .def("local_mem_size", &BigMemory::local_mem_size, py::arg("mem_type") = SMEM_MEM_TYPE_DEVICE)
      .def("peer_rank_ptr", &BigMemory::peer_rank_ptr, py::arg("peer_rank"),
           py::arg("mem_type") = SMEM_MEM_TYPE_DEVICE)
      .def("destroy", &BigMemory::destroy)
      .def("register", &BigMemory::register_memory, py::arg("addr"), py::arg("size"))
      .def("unregister", &BigMemory::unregister_memory, py::arg("addr"))
      .def("copy_data", &BigMemory::copy_data, py::arg("src_ptr"), py::arg("dst_ptr"),
           py::arg("size"), py::arg("type"), py::arg("flags") = 0)
      .def("copy_data_batch", &BigMemory::copy_data_batch, py::arg("src_addrs"),
           py::arg("dst_addrs"), py::arg("sizes"), py::arg("count"), py::arg("type"),
           py::arg("flags"));
}

}  // namespace memloom::python
