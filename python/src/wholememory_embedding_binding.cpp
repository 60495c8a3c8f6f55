// memloom.wholememory embeddings (wholememory/embedding.h): optimizers, cache policies and
// embedding tables, bound thinly; pylibwholegraph.torch.embedding adds upstream's torch layer.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "blocking_call.h"
#include "memloom/stream.h"
#include "wholememory/embedding.h"
#include "wholememory_objects.h"

namespace memloom::python {

namespace {

struct Optimizer {
  wholememory_embedding_optimizer_t handle = nullptr;
  wholememory_embedding_optimizer_t get() const {
    if (handle == nullptr) raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "no optimizer");
    return handle;
  }
};

struct CachePolicy {
  wholememory_embedding_cache_policy_t handle = nullptr;
};

struct Embedding {
  wholememory_embedding_t handle = nullptr;
  wholememory_embedding_t get() const {
    if (handle == nullptr) {
      raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "the embedding was destroyed");
    }
    return handle;
  }
};

Optimizer create_optimizer(wholememory_optimizer_type_t type) {
  Optimizer optimizer;
  check(wholememory_create_embedding_optimizer(&optimizer.handle, type),
        "wholememory_create_embedding_optimizer");
  return optimizer;
}

void set_parameter(const Optimizer& optimizer, const std::string& name, float value) {
  check(wholememory_optimizer_set_parameter(optimizer.get(), name.c_str(), &value),
        ("wholememory_optimizer_set_parameter(" + name + ")").c_str());
}

void destroy_optimizer(Optimizer& optimizer) {
  if (optimizer.handle != nullptr) wholememory_destroy_embedding_optimizer(optimizer.handle);
  optimizer.handle = nullptr;
}

CachePolicy create_cache_policy(const Comm& comm, wholememory_memory_type_t type,
                                wholememory_memory_location_t location,
                                wholememory_access_type_t access, float ratio) {
  CachePolicy policy;
  check(wholememory_create_embedding_cache_policy(&policy.handle, comm.get(), type, location,
                                                  access, ratio),
        "wholememory_create_embedding_cache_policy");
  return policy;
}

void destroy_cache_policy(CachePolicy& policy) {
  if (policy.handle != nullptr) {
    check(wholememory_destroy_embedding_cache_policy(policy.handle),
          "wholememory_destroy_embedding_cache_policy");
  }
  policy.handle = nullptr;
}

Embedding create_embedding(const Comm& comm, std::vector<int64_t> shape, wholememory_dtype_t dtype,
                           wholememory_memory_type_t type, wholememory_memory_location_t location,
                           const CachePolicy* policy, std::optional<std::vector<size_t>> partition,
                           int user_defined_sms, int round_robin_size) {
  if (shape.size() != 2) throw py::value_error("an embedding's shape must be 2-D");
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = 2;
  desc.dtype = dtype;
  desc.sizes[0] = shape[0];
  desc.sizes[1] = shape[1];
  desc.strides[0] = shape[1];
  desc.strides[1] = 1;
  wholememory_comm_t handle = comm.get();
  wholememory_embedding_cache_policy_t cache = policy != nullptr ? policy->handle : nullptr;
  auto made = call_interruptibly<std::pair<Outcome, wholememory_embedding_t>>(
      [desc, handle, type, location, cache, partition, user_defined_sms,
       round_robin_size]() mutable {
        wholememory_embedding_t embedding = nullptr;
        std::vector<size_t> plan = partition.value_or(std::vector<size_t>());
        Outcome outcome = outcome_of(wholememory_create_embedding(
            &embedding, &desc, handle, type, location, cache, plan.empty() ? nullptr : plan.data(),
            user_defined_sms, round_robin_size));
        return std::make_pair(outcome, embedding);
      });
  check(made.first, "wholememory_create_embedding");
  Embedding embedding;
  embedding.handle = made.second;
  return embedding;
}

// Collective calls that return only a status, run interruptibly (they wait on peers).
template <typename F>
void collective(const char* what, F call) {
  check(call_interruptibly<Outcome>([call] { return outcome_of(call()); }), what);
}

void destroy_embedding(Embedding& embedding) {
  wholememory_embedding_t handle = embedding.get();
  embedding.handle = nullptr;
  collective("wholememory_destroy_embedding",
             [handle] { return wholememory_destroy_embedding(handle); });
}

PyTensor embedding_tensor(const Embedding& embedding) {
  PyTensor tensor;
  tensor.handle = wholememory_embedding_get_embedding_tensor(embedding.get());
  if (tensor.handle == nullptr) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "the embedding has no table");
  }
  return tensor;
}

void set_optimizer(const Embedding& embedding, const Optimizer& optimizer) {
  wholememory_embedding_t handle = embedding.get();
  wholememory_embedding_optimizer_t opt = optimizer.get();
  collective("wholememory_embedding_set_optimizer",
             [handle, opt] { return wholememory_embedding_set_optimizer(handle, opt); });
}

// The C call then a wait for its stream (the default one, as gather() in the tensor binding).
template <typename F>
Outcome with_sync(F call) {
  Outcome result = outcome_of(call());
  if (result.code == WHOLEMEMORY_SUCCESS && memloom_stream_synchronize(nullptr) != 0) {
    result = Outcome{WHOLEMEMORY_LOGIC_ERROR, take_failure_message()};
  }
  return result;
}

// An embedding of several ranks waits on the peers owning the rows: its calls are interruptible.
bool spans_ranks(const Embedding& embedding) {
  wholememory_tensor_t table = wholememory_embedding_get_embedding_tensor(embedding.get());
  wholememory_handle_t memory =
      table != nullptr ? wholememory_tensor_get_memory_handle(table) : nullptr;
  wholememory_comm_t comm = nullptr;
  int size = 1;
  if (memory != nullptr && wholememory_get_communicator(&comm, memory) == WHOLEMEMORY_SUCCESS) {
    wholememory_communicator_get_size(&size, comm);
  }
  return size > 1;
}

void gather(const Embedding& embedding, py::handle indices, py::handle output, bool adjust_cache) {
  auto index_tensor = std::make_shared<BorrowedTensor>(describe(indices, "indices"), 1, "indices");
  ArrayRef output_ref = describe(output, "output");
  if (!output_ref.writable) throw py::value_error("output is read-only");
  auto output_tensor = std::make_shared<BorrowedTensor>(output_ref, 2, "output");
  wholememory_embedding_t handle = embedding.get();
  check(
      call_data_path<Outcome>(
          spans_ranks(embedding),
          {py::reinterpret_borrow<py::object>(indices), py::reinterpret_borrow<py::object>(output)},
          [handle, index_tensor, output_tensor, adjust_cache] {
            return with_sync([&] {
              return wholememory_embedding_gather(handle, index_tensor->get(), output_tensor->get(),
                                                  adjust_cache, nullptr, 0);
            });
          }),
      "wholememory_embedding_gather");
}

// Collective: waits (bounded by the library's deadline) on the peers owning the rows; with
// several ranks a Ctrl-C interrupts the wait (call_data_path keeps the arrays alive).
void gradient_apply(const Embedding& embedding, py::handle indices, py::handle grads,
                    bool adjust_cache, float lr) {
  auto index_tensor = std::make_shared<BorrowedTensor>(describe(indices, "indices"), 1, "indices");
  auto grad_tensor = std::make_shared<BorrowedTensor>(describe(grads, "grads"), 2, "grads");
  wholememory_embedding_t handle = embedding.get();
  check(
      call_data_path<Outcome>(
          spans_ranks(embedding),
          {py::reinterpret_borrow<py::object>(indices), py::reinterpret_borrow<py::object>(grads)},
          [handle, index_tensor, grad_tensor, adjust_cache, lr] {
            return with_sync([&] {
              return wholememory_embedding_gather_gradient_apply(
                  handle, index_tensor->get(), grad_tensor->get(), adjust_cache, lr, nullptr, 0);
            });
          }),
      "wholememory_embedding_gather_gradient_apply");
}

std::vector<std::string> state_names(const Embedding& embedding) {
  std::vector<std::string> names;
  const char* const* list = wholememory_embedding_get_optimizer_state_names(embedding.get());
  for (; list != nullptr && *list != nullptr; ++list) names.emplace_back(*list);
  return names;
}

PyTensor optimizer_state(const Embedding& embedding, const std::string& name) {
  PyTensor tensor;
  tensor.handle = wholememory_embedding_get_optimizer_state(embedding.get(), name.c_str());
  if (tensor.handle == nullptr) {
    raise_wholememory_error(WHOLEMEMORY_INVALID_INPUT, "no optimizer state named " + name);
  }
  return tensor;
}

}  // namespace

void bind_wholememory_embedding(py::module_& m) {
  py::enum_<wholememory_access_type_t>(m, "AccessType")
      .value("AtNone", WHOLEMEMORY_AT_NONE)
      .value("AtReadOnly", WHOLEMEMORY_AT_READONLY)
      .value("AtReadWrite", WHOLEMEMORY_AT_READWRITE);
  py::enum_<wholememory_optimizer_type_t>(m, "OptimizerType")
      .value("OptNone", WHOLEMEMORY_OPT_NONE)
      .value("OptSgd", WHOLEMEMORY_OPT_SGD)
      .value("OptLazyAdam", WHOLEMEMORY_OPT_LAZY_ADAM)
      .value("OptRmsProp", WHOLEMEMORY_OPT_RMSPROP)
      .value("OptAdaGrad", WHOLEMEMORY_OPT_ADAGRAD);
  py::class_<Optimizer>(m, "EmbeddingOptimizer")
      .def("set_parameter", &set_parameter, py::arg("name"), py::arg("value"))
      .def("destroy", &destroy_optimizer);
  m.def("create_embedding_optimizer", &create_optimizer, py::arg("optimizer_type"));
  py::class_<CachePolicy>(m, "EmbeddingCachePolicy").def("destroy", &destroy_cache_policy);
  m.def("create_embedding_cache_policy", &create_cache_policy, py::arg("cache_level_comm"),
        py::arg("memory_type"), py::arg("memory_location"), py::arg("access_type"),
        py::arg("cache_ratio"));
  py::class_<Embedding>(m, "Embedding")
      .def("get_embedding_tensor", &embedding_tensor)
      .def("set_optimizer", &set_optimizer, py::arg("optimizer"))
      .def("gather", &gather, py::arg("indices"), py::arg("output"), py::arg("adjust_cache"))
      .def("gradient_apply", &gradient_apply, py::arg("indices"), py::arg("grads"),
           py::arg("adjust_cache"), py::arg("lr"))
      .def("optimizer_state_names", &state_names)
      .def("optimizer_state", &optimizer_state, py::arg("name"))
      .def("writeback_cache",
           [](const Embedding& e) {
             wholememory_embedding_t h = e.get();
             collective("wholememory_embedding_writeback_cache",
                        [h] { return wholememory_embedding_writeback_cache(h, 0); });
           })
      .def("drop_all_cache",
           [](const Embedding& e) {
             wholememory_embedding_t h = e.get();
             collective("wholememory_embedding_drop_all_cache",
                        [h] { return wholememory_embedding_drop_all_cache(h, 0); });
           })
      .def("destroy", &destroy_embedding);
  m.def("create_embedding", &create_embedding, py::arg("comm"), py::arg("shape"), py::arg("dtype"),
        py::arg("memory_type"), py::arg("memory_location"), py::arg("cache_policy") = nullptr,
        py::arg("entry_partition") = py::none(), py::arg("user_defined_sms") = -1,
        py::arg("round_robin_size") = 0, "Collective: a new embedding table.");
}

}  // namespace memloom::python
